"""The schedules example of clients/python/README.md: create a schedule that starts a workflow
every night at 02:00 Berlin time, move it to Tokyo time (an update of one value that keeps the
rest), trigger one run now and print it once the sweeper has started it, with the labels the
schedule gave it. Run it against `npm start` (waymark dev, whose sweeper takes the ticks):
`python examples/schedule.py [address] [schedule-id] [workflow] [input-json]` (default: the refund
example); it reads WAYMARK_TOKEN and WAYMARK_NAMESPACE as examples/refund.py does.
test/clients/flow-clients.test.ts runs it beside the Go and TypeScript clients and compares the
schedules the three wrote."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

import waymark


def main(
    address: str = "127.0.0.1:50051",
    schedule_id: str = "nightly-refund",
    workflow: str = "refund",
    input_json: str = '{"order": "A-1001", "amount": 42.5}',
) -> None:
    with waymark.Client(
        address,
        token=os.environ.get("WAYMARK_TOKEN") or None,
        namespace=os.environ.get("WAYMARK_NAMESPACE", ""),
        connect_timeout=30,
    ) as client:
        try:
            created = client.schedules.create(
                schedule_id,
                workflow=workflow,
                input=json.loads(input_json),
                cron=["0 2 * * *"],
                time_zone="Europe/Berlin",
                exclude=["0 2 25 12 *"],  # not on Christmas
                jitter=30,
                labels={"team": "payments"},
                run_timeout=timedelta(hours=1),
                overlap="BUFFER_ONE",
                catchup_window=timedelta(minutes=5),
                pause_on_failure=True,
                remaining_actions=100,
            )
        except waymark.ScheduleExists as exists:
            sys.exit(f"schedule {exists.schedule_id} exists already: delete it first (client.schedules.delete, or waymark schedules delete)")
        next_at = created.info.future_action_times[0].ToDatetime().strftime("%Y-%m-%dT%H:%M:%SZ")
        print(f"schedule {schedule_id} created: next run at {next_at}")

        # Change one value: the client reads the schedule and sends back the part it is in.
        moved = client.schedules.update(schedule_id, time_zone="Asia/Tokyo")
        print(f"schedule {schedule_id} now ticks {list(moved.spec.cron)} in {moved.spec.time_zone}")

        client.schedules.trigger(schedule_id)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for run in client.list_runs(labels={"waymark.schedule_id": schedule_id}):
                print(
                    f"run {run.id} of {run.workflow_name} started by schedule {schedule_id}, "
                    f"scheduled at {run.labels['waymark.scheduled_at']}, team {run.labels['team']}"
                )
                return
            time.sleep(0.25)
        sys.exit("no run within two minutes: is a sweeper running? (waymark dev runs one; a server alone does not)")


if __name__ == "__main__":
    main(*sys.argv[1:5])
