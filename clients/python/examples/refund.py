"""The refund example of clients/python/README.md: start the run, follow its events, approve it
when it parks, print the result. Run it against `npm start` (waymark dev)."""

import sys

import waymark
from waymark.v1 import run_pb2


def main(address: str = "127.0.0.1:50051") -> None:
    with waymark.Client(address) as client:
        started = client.start_run("refund", {"order": "A-1001", "amount": 42.5}, idempotency_key="refund-A-1001")
        run_id = started.run.id
        print("run", run_id)

        # Reconnects by itself if the connection drops, resuming after the last seq it yielded.
        for event in client.events(run_id, follow_suspended=True):
            if event.WhichOneof("body") == "entry":
                entry = event.entry
                print(f"{event.seq:3} {entry.kind} {entry.name} {run_pb2.EntryStatus.Name(entry.status)}")
                continue
            status = event.status_changed.status
            print(f"{event.seq:3} run {run_pb2.RunStatus.Name(status)}")
            if status == run_pb2.RUN_STATUS_SUSPENDED:
                for approval in client.list_approvals(run_id=run_id):
                    print("approving:", approval.title)
                    client.approve(approval.id, by="ana@example.com")
            elif status == run_pb2.RUN_STATUS_SUCCEEDED:
                print("result:", waymark.from_value(event.status_changed.output))


if __name__ == "__main__":
    main(*sys.argv[1:])
