"""The refund example of clients/python/README.md: start the run, follow its events, approve it
when it parks, print the result. Run it against `npm start` (waymark dev):
`python examples/refund.py [address] [order]`. Against a server with TLS and authentication it
reads the variables the CLI reads: WAYMARK_CA_FILE (TLS, trusting that CA), WAYMARK_TOKEN (the API
key) and WAYMARK_NAMESPACE. test/clients/packaging.test.ts installs the wheel into a fresh
virtualenv, checks this file with `mypy --strict` there and runs it;
test/clients/refund-tls.test.ts runs it over TLS with a key."""

from __future__ import annotations

import os
import sys

import waymark
from waymark import EntryStatus, RunStatus


def main(address: str = "127.0.0.1:50051", order: str = "A-1001") -> None:
    ca_file = os.environ.get("WAYMARK_CA_FILE")
    # connect_timeout: fail at once, with waymark.Unavailable, when no server answers.
    with waymark.Client(
        address,
        tls=waymark.tls_credentials(ca_file=ca_file) if ca_file else False,
        token=os.environ.get("WAYMARK_TOKEN") or None,  # authorization: Bearer <key> on every call
        namespace=os.environ.get("WAYMARK_NAMESPACE", ""),
        connect_timeout=10,
    ) as client:
        started = client.start_run("refund", {"order": order, "amount": 42.5}, idempotency_key=f"refund-{order}")
        run_id = started.run.id
        print("run", run_id)

        # Reconnects by itself if the connection drops, resuming after the last seq it yielded.
        for event in client.events(run_id, follow_suspended=True):
            if event.WhichOneof("body") == "entry":
                entry = event.entry
                print(f"{event.seq:3} {entry.kind} {entry.name} {EntryStatus(entry.status).name}")
                continue
            status = RunStatus(event.status_changed.status)
            print(f"{event.seq:3} run {status.name}")
            if status == RunStatus.SUSPENDED:
                for approval in client.list_approvals(run_id=run_id):
                    print("approving:", approval.title)
                    client.approve(approval.id, by="ana@example.com")

        try:
            print("result:", client.result(run_id, timeout=30))
        except waymark.RunFailed as failed:
            print("the refund did not go through:", failed)
            sys.exit(1)


if __name__ == "__main__":
    main(*sys.argv[1:])
