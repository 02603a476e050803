"""The flow example of clients/python/README.md: register the refund flow (a declarative flow:
approve, branch on the decision, charge back, end), start a run of it, follow its events, approve
it when it parks, print its result. No TypeScript and no redeploy: the flow lives in the server's
store. Run it against `npm start` (waymark dev): `python examples/refund_flow.py [address] [order]`;
it reads WAYMARK_CA_FILE, WAYMARK_TOKEN and WAYMARK_NAMESPACE as examples/refund.py does.
test/clients/flow-clients.test.ts runs it, once plainly and once with its server killed (SIGKILL)
while the charge_back tool is in flight; test/clients/packaging.test.ts checks it with
`mypy --strict` against the installed wheel."""

from __future__ import annotations

import os
import sys
from typing import Any

import waymark
from waymark import EntryStatus, RunStatus

# examples/refund.ts as a flow, in the protobuf JSON form of waymark.v1.Flow (client.flows.register
# also takes the message itself, or this as JSON or YAML text). `charge_back` is a tool the server
# registers; "{{ state.x }}" templates read the run's state, and a string that is only one
# template keeps the value's JSON type (amount stays a number).
REFUND_FLOW: dict[str, Any] = {
    "name": "refund-flow",
    "description": "Refunds an order after a person approves it.",
    "stateSchema": {
        "type": "object",
        "properties": {
            "order": {"type": "string", "minLength": 1},
            "amount": {"type": "number", "exclusiveMinimum": 0},
            "decision": {"type": "object"},
            "refund": {"type": "object"},
        },
        "required": ["order", "amount"],
    },
    "start": "approve",
    "nodes": [
        {
            "id": "approve",
            "approval": {
                "title": "Refund ${{ state.amount }} for order {{ state.order }}?",
                "deadline": "86400s",
                "onTimeout": "APPROVAL_TIMEOUT_DECISION_DENY",
                "into": "decision",
            },
        },
        {"id": "approved", "branch": {}},
        {"id": "charge", "tool": {"tool": "charge_back", "arguments": {"order": "{{ state.order }}", "amount": "{{ state.amount }}"}, "into": "refund"}},
        {"id": "refunded", "end": {"output": {"status": "refunded", "refundId": "{{ state.refund.refundId }}"}}},
        {"id": "declined", "end": {"output": {"status": "declined", "by": "{{ state.decision.by }}"}}},
    ],
    "edges": [
        {"from": "approve", "to": "approved"},
        {"from": "approved", "to": "charge", "condition": "state.decision.approved"},
        {"from": "approved", "to": "declined"},
        {"from": "charge", "to": "refunded"},
    ],
}


def main(address: str = "127.0.0.1:50051", order: str = "A-1001") -> None:
    ca_file = os.environ.get("WAYMARK_CA_FILE")
    with waymark.Client(
        address,
        tls=waymark.tls_credentials(ca_file=ca_file) if ca_file else False,
        token=os.environ.get("WAYMARK_TOKEN") or None,
        namespace=os.environ.get("WAYMARK_NAMESPACE", ""),
        connect_timeout=10,
    ) as client:
        # Registering the same content again is a no-op answering the same version, so a program
        # (or a deploy step) may register its flows every time it starts.
        try:
            registered = client.flows.register(REFUND_FLOW)
        except waymark.InvalidFlow as invalid:
            for violation in invalid.field_violations:
                print(f"invalid flow: {violation.field}: {violation.description}")
            sys.exit(1)
        flow = registered.flow
        print(f"flow {flow.flow.name} version {flow.version} {flow.digest} (created: {registered.created})")

        # A flow starts like a code workflow, by name; the run pins this version's digest.
        started = client.start_run("refund-flow", {"order": order, "amount": 42.5}, idempotency_key=f"refund-flow-{order}")
        run_id = started.run.id
        print("run", run_id)

        # The journal shows each node entered and each branch decision (emit entries flow.node and
        # flow.branch) beside the effects: the approval, then charge_back.
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
            print("result:", client.result(run_id, timeout=120))
        except waymark.RunFailed as failed:
            print("the refund did not go through:", failed)
            sys.exit(1)


if __name__ == "__main__":
    main(*sys.argv[1:])
