"""Schedules against a real server and sweeper (test/clients/clients.test.ts starts both; without
WAYMARK_ADDRESS these skip): create (a taken id raises ScheduleExists), get with its next times,
list, change the time zone keeping the cron expression, pause and unpause, trigger one run that
starts with the schedule's labels and finishes, delete (then ScheduleNotFound); the same from the
asyncio client."""

from __future__ import annotations

import asyncio
import os
import secrets
import time

import pytest

import waymark
from waymark.v1 import run_pb2

ADDRESS = os.environ.get("WAYMARK_ADDRESS", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs these against a real server"
)

# Midnight on 1 January: no tick of its own while a test runs; the run comes from the trigger.
YEARLY = ["0 0 1 1 *"]


def the_run(runs: list[run_pb2.Run]) -> run_pb2.Run | None:
    assert len(runs) <= 1, f"one trigger started {len(runs)} runs"
    return runs[0] if runs else None


def test_live_schedule_lifecycle() -> None:
    schedule_id = f"py-schedule-{secrets.token_hex(4)}"
    with waymark.Client(ADDRESS, connect_timeout=30) as c:
        created = c.schedules.create(
            schedule_id, workflow="scheduled_echo", input={"note": schedule_id}, cron=YEARLY, time_zone="Europe/Berlin",
            labels={"suite": "py-live"}, run_timeout=60, catchup_window=120,
        )
        assert created.id == schedule_id and not created.paused and created.info.future_action_times
        with pytest.raises(waymark.ScheduleExists) as taken:
            c.schedules.create(schedule_id, workflow="scheduled_echo", input={"note": "again"}, cron=YEARLY)
        assert taken.value.schedule_id == schedule_id

        got = c.schedules.get(schedule_id)
        assert got.action.workflow == "scheduled_echo" and len(got.info.future_action_times) == 10
        assert schedule_id in [s.id for s in c.schedules.list()]

        moved = c.schedules.update(schedule_id, time_zone="Asia/Tokyo")
        assert moved.spec.time_zone == "Asia/Tokyo" and list(moved.spec.cron) == YEARLY and moved.action.labels["suite"] == "py-live"
        paused = c.schedules.pause(schedule_id, "pytest")
        assert paused.paused and paused.note == "pytest"
        assert not c.schedules.unpause(schedule_id, "pytest again").paused

        c.schedules.trigger(schedule_id, overlap="ALLOW_ALL")
        deadline = time.monotonic() + 60
        while (run := the_run(list(c.list_runs(labels={"waymark.schedule_id": schedule_id})))) is None:
            assert time.monotonic() < deadline, "the sweeper did not start the triggered run"
            time.sleep(0.2)
        assert run.workflow_name == "scheduled_echo" and run.labels["suite"] == "py-live" and run.labels["waymark.scheduled_at"]
        assert c.result(run.id, timeout=60) == {"echoed": schedule_id}
        recent = c.schedules.get(schedule_id).info.recent_actions
        assert [(a.run_id, a.cause) for a in recent] == [(run.id, waymark.ScheduleActionCause.TRIGGER)]

        c.schedules.delete(schedule_id)
        with pytest.raises(waymark.ScheduleNotFound):
            c.schedules.get(schedule_id)
        with pytest.raises(waymark.ScheduleNotFound):
            c.schedules.delete(schedule_id)
        assert c.get_run(run.id).run.id == run.id  # the schedule's run is kept


@pytest.mark.asyncio
async def test_live_schedule_from_asyncio() -> None:
    schedule_id = f"py-async-schedule-{secrets.token_hex(4)}"
    async with waymark.AsyncClient(ADDRESS, connect_timeout=30) as c:
        await c.schedules.create(schedule_id, workflow="scheduled_echo", input={"note": schedule_id}, cron=YEARLY, paused=True, note="created paused")
        assert (await c.schedules.get(schedule_id)).paused
        assert schedule_id in [s.id async for s in c.schedules.list()]
        await c.schedules.trigger(schedule_id)  # waits while the schedule is paused
        assert not (await c.schedules.unpause(schedule_id)).paused
        deadline = time.monotonic() + 60
        while (run := the_run([r async for r in c.list_runs(labels={"waymark.schedule_id": schedule_id})])) is None:
            assert time.monotonic() < deadline, "the sweeper did not start the triggered run"
            await asyncio.sleep(0.2)
        assert await c.result(run.id, timeout=60) == {"echoed": schedule_id}
        await c.schedules.delete(schedule_id)
        with pytest.raises(waymark.ScheduleNotFound):
            await c.schedules.get(schedule_id)
