"""Serves the refund example's ``charge_back`` tool from a Python service (a remote tool,
docs/workers.md): ``python examples/worker.py [address]``.

It registers ``charge_back`` (its input schema comes from the ``Charge`` dataclass), long-polls
for tasks and POSTs each refund to WAYMARK_EXAMPLE_SINK_URL (when set) with the task's
idempotency key in the Idempotency-Key header, as a payment provider integration would. It reads
WAYMARK_CA_FILE, WAYMARK_TOKEN and WAYMARK_NAMESPACE as the CLI does, and stops gracefully on
SIGINT or SIGTERM (the task in progress finishes first). WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT
(seconds) declares a shorter heartbeat timeout than the server's 30 s, so that
test/clients/remote-refund.test.ts, which kills a worker holding the task, sees another worker
take it soon. WAYMARK_EXAMPLE_POLICY ("allow", "ask" or "deny"; default "allow") declares the
tool's policy: with "ask" each call parks its run on an approval first (the agent scenario there).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import urllib.request
from typing import Literal, cast

import waymark


@dataclasses.dataclass
class Charge:
    order: str
    amount: float


def main() -> None:
    address = sys.argv[1] if len(sys.argv) > 1 else waymark.DEFAULT_ADDRESS
    ca_file = os.environ.get("WAYMARK_CA_FILE")
    worker = waymark.Worker(
        address,
        tls=waymark.tls_credentials(ca_file=ca_file) if ca_file else False,
        token=os.environ.get("WAYMARK_TOKEN"),
        namespace=os.environ.get("WAYMARK_NAMESPACE", ""),
    )

    heartbeat = os.environ.get("WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT")
    policy = os.environ.get("WAYMARK_EXAMPLE_POLICY", "allow")
    if policy not in ("allow", "ask", "deny"):
        sys.exit(f"WAYMARK_EXAMPLE_POLICY must be allow, ask or deny, got {policy!r}")
    declared = cast(Literal["allow", "ask", "deny"], policy)

    @worker.tool(
        name="charge_back",
        mutating=True,
        policy=declared,
        heartbeat_timeout=float(heartbeat) if heartbeat else None,
    )
    def charge_back(charge: Charge, task: waymark.Task) -> dict[str, object]:
        """Refunds an order through the payment provider."""
        if charge.amount <= 0:
            # Retrying cannot fix it: the call fails at once.
            raise waymark.NonRetryableError(f"amount must be positive, got {charge.amount}")
        sink = os.environ.get("WAYMARK_EXAMPLE_SINK_URL")
        if sink:
            request = urllib.request.Request(
                sink,
                data=json.dumps(dataclasses.asdict(charge)).encode(),
                headers={"content-type": "application/json", "Idempotency-Key": task.idempotency_key},
                method="POST",
            )
            # Any exception is retryable: the engine dispatches the call again, with the same key.
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
        # A provider derives the refund from the key, so a redispatch returns the same refund.
        return {"refundId": f"rf_{task.idempotency_key[-16:]}", "order": charge.order, "amount": charge.amount}

    worker.run()


if __name__ == "__main__":
    main()
