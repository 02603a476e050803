"""Schedules from Python: ``client.schedules`` (sync and asyncio) builds each request from keyword
arguments with the client's namespace, updates one part of a schedule with an update mask and keeps
the rest, retries reads, updates, pauses, backfills and deletes, sends a create and a trigger once,
and raises the typed ScheduleNotFound / ScheduleExists, against a scripted in-process server."""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark.v1 import schedule_service_pb2 as pb
from waymark.v1 import schedule_service_pb2_grpc

FAST = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=20)
UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, None, {})


def missing(schedule_id: str) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    return (grpc.StatusCode.NOT_FOUND, "SCHEDULE_NOT_FOUND", {"schedule_id": schedule_id})


@dataclass
class ScriptedSchedules(schedule_service_pb2_grpc.ScheduleServiceServicer):
    """Answers each call with the next (code, ErrorInfo reason, metadata) of its script, then
    succeeds: a create or an update stores the schedule it was sent, which a get answers."""

    script: list[tuple[grpc.StatusCode, str | None, dict[str, str]]] = field(default_factory=list)
    requests: list[Any] = field(default_factory=list)
    stored: pb.Schedule = field(default_factory=pb.Schedule)

    def _next(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        if not self.script:
            return
        code, reason, metadata = self.script.pop(0)
        status = status_pb2.Status(code=code.value[0], message="scripted")
        if reason is not None:
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="waymark", metadata=metadata))
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, "scripted")

    def CreateSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.CreateScheduleResponse:
        self._next(request, context)
        self.stored.CopyFrom(request.schedule)
        return pb.CreateScheduleResponse(schedule=request.schedule)

    def GetSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.GetScheduleResponse:
        self._next(request, context)
        return pb.GetScheduleResponse(schedule=self.stored)

    def ListSchedules(self, request: Any, context: grpc.ServicerContext) -> pb.ListSchedulesResponse:
        self._next(request, context)
        if not request.page_token:
            return pb.ListSchedulesResponse(schedules=[pb.Schedule(id="archive")], next_page_token="after-archive")
        return pb.ListSchedulesResponse(schedules=[pb.Schedule(id="reports")])

    def UpdateSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.UpdateScheduleResponse:
        self._next(request, context)
        self.stored.CopyFrom(request.schedule)
        return pb.UpdateScheduleResponse(schedule=request.schedule)

    def PauseSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.PauseScheduleResponse:
        self._next(request, context)
        return pb.PauseScheduleResponse(schedule=pb.Schedule(id=request.schedule_id, paused=True, note=request.note))

    def UnpauseSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.UnpauseScheduleResponse:
        self._next(request, context)
        return pb.UnpauseScheduleResponse(schedule=pb.Schedule(id=request.schedule_id, note=request.note))

    def TriggerSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.TriggerScheduleResponse:
        self._next(request, context)
        return pb.TriggerScheduleResponse(schedule=pb.Schedule(id=request.schedule_id, info=pb.ScheduleInfo(buffered_actions=1)))

    def BackfillSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.BackfillScheduleResponse:
        self._next(request, context)
        return pb.BackfillScheduleResponse(schedule=pb.Schedule(id=request.schedule_id), queued=3)

    def DeleteSchedule(self, request: Any, context: grpc.ServicerContext) -> pb.DeleteScheduleResponse:
        self._next(request, context)
        return pb.DeleteScheduleResponse()


def serve(scripted: ScriptedSchedules) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    schedule_service_pb2_grpc.add_ScheduleServiceServicer_to_server(scripted, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


REPORTS: dict[str, Any] = dict(
    workflow="echo-flow",
    input={"value": "weekly"},
    cron=["0 9 * * 1"],
    intervals=[3600, (timedelta(days=1), 1.5)],
    time_zone="America/New_York",
    end_at=datetime(2027, 1, 1, tzinfo=timezone.utc),
    jitter=timedelta(seconds=30),
    labels={"team": "a"},
    run_timeout=60,
    overlap="BUFFER_ALL",
    catchup_window=120,
    budget_pause=(5.0, timedelta(hours=1)),
    remaining_actions=3,
)


def test_create_builds_the_schedule_from_keywords_and_is_sent_once() -> None:
    scripted = ScriptedSchedules([UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="payments") as c:
        with pytest.raises(waymark.Unavailable):
            c.schedules.create("reports", **REPORTS)
        assert len(scripted.requests) == 1
        created = c.schedules.create("reports", **REPORTS)
        sent = scripted.requests[-1]
        assert sent.namespace == "payments" and created == sent.schedule
        assert json_format.MessageToDict(sent.schedule) == {
            "id": "reports",
            "spec": {
                "cron": ["0 9 * * 1"],
                "intervals": [{"every": "3600s"}, {"every": "86400s", "offset": "1.500s"}],
                "timeZone": "America/New_York",
                "endTime": "2027-01-01T00:00:00Z",
                "jitter": "30s",
            },
            "action": {"workflow": "echo-flow", "input": {"value": "weekly"}, "labels": {"team": "a"}, "timeout": "60s"},
            "policies": {"overlap": "SCHEDULE_OVERLAP_POLICY_BUFFER_ALL", "catchupWindow": "120s", "budgetPause": {"limitUsd": 5.0, "window": "3600s"}},
            "remainingActions": "3",
        }
        with pytest.raises(ValueError, match="unknown overlap policy"):
            c.schedules.create("bad", workflow="echo-flow", cron=["* * * * *"], overlap="SOMETIMES")
        with pytest.raises(TypeError, match="list of cron expressions"):
            c.schedules.create("bad", workflow="echo-flow", cron="* * * * *")
        assert len(scripted.requests) == 2
    server.stop(None)


def test_update_sends_the_parts_it_changes_and_keeps_the_rest() -> None:
    scripted = ScriptedSchedules()
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="payments") as c:
        c.schedules.create("reports", **REPORTS)
        scripted.stored.info.action_count = 7  # output only: not sent back
        scripted.script = [UNAVAILABLE, UNAVAILABLE]
        moved = c.schedules.update("reports", time_zone="Asia/Tokyo")
        get, update = scripted.requests[-4], scripted.requests[-1]
        assert isinstance(get, pb.GetScheduleRequest) and get.schedule_id == "reports" and get.namespace == "payments"
        assert isinstance(update, pb.UpdateScheduleRequest) and len(scripted.requests) == 5
        assert (update.namespace, update.schedule_id, list(update.update_mask.paths)) == ("payments", "reports", ["spec"])
        assert list(moved.spec.cron) == ["0 9 * * 1"] and moved.spec.time_zone == "Asia/Tokyo"
        assert moved.action.workflow == "echo-flow" and moved.remaining_actions == 3 and not update.schedule.HasField("info")

        unlimited = c.schedules.update("reports", remaining_actions=None, overlap=waymark.ScheduleOverlapPolicy.ALLOW_ALL)
        assert list(scripted.requests[-1].update_mask.paths) == ["policies", "remaining_actions"]
        assert not unlimited.HasField("remaining_actions") and unlimited.policies.overlap == waymark.ScheduleOverlapPolicy.ALLOW_ALL
        assert unlimited.policies.catchup_window.seconds == 120  # the rest of the policies kept

        before = len(scripted.requests)
        with pytest.raises(TypeError, match="pause and unpause"):
            c.schedules.update("reports", paused=True)
        with pytest.raises(TypeError, match="nothing to update"):
            c.schedules.update("reports")
        assert len(scripted.requests) == before
    server.stop(None)


def test_calls_carry_the_namespace_and_retry_only_what_is_safe() -> None:
    scripted = ScriptedSchedules()
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="payments") as c:
        scripted.script = [UNAVAILABLE]
        assert [s.id for s in c.schedules.list(page_size=1)] == ["archive", "reports"]
        assert scripted.requests[-1].page_size == 1 and scripted.requests[-1].page_token == "after-archive"
        assert len(scripted.requests) == 3

        scripted.script = [UNAVAILABLE]
        paused = c.schedules.pause("reports", "holiday")
        assert paused.paused and scripted.requests[-1].note == "holiday" and len(scripted.requests) == 5
        scripted.script = [UNAVAILABLE]
        assert c.schedules.unpause("reports", note="back").note == "back" and len(scripted.requests) == 7

        scripted.script = [UNAVAILABLE]
        with pytest.raises(waymark.Unavailable):
            c.schedules.trigger("reports", overlap="allow_all")
        assert len(scripted.requests) == 8
        assert c.schedules.trigger("reports", overlap="allow_all").info.buffered_actions == 1
        assert scripted.requests[-1].overlap == waymark.ScheduleOverlapPolicy.ALLOW_ALL

        start, end = datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 16, 23, 59, 59, tzinfo=timezone.utc)
        scripted.script = [UNAVAILABLE]
        assert c.schedules.backfill("reports", start, end).queued == 3
        sent = scripted.requests[-1]
        assert len(scripted.requests) == 11 and sent.overlap == 0
        assert (sent.start_time.ToDatetime(timezone.utc), sent.end_time.ToDatetime(timezone.utc)) == (start, end)

        # The first attempt deleted it and its answer was lost: the retry's SCHEDULE_NOT_FOUND is success.
        scripted.script = [UNAVAILABLE, missing("reports")]
        assert c.schedules.delete("reports") is None and len(scripted.requests) == 13
        assert {r.namespace for r in scripted.requests} == {"payments"}
    server.stop(None)


def test_schedule_errors_are_typed() -> None:
    scripted = ScriptedSchedules([missing("reports")])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST) as c:
        with pytest.raises(waymark.ScheduleNotFound) as gone:
            c.schedules.delete("reports")
        assert (gone.value.schedule_id, gone.value.code) == ("reports", grpc.StatusCode.NOT_FOUND)
        scripted.script = [missing("nope")]
        with pytest.raises(waymark.ScheduleNotFound):
            c.schedules.get("nope")
        scripted.script = [(grpc.StatusCode.ALREADY_EXISTS, "SCHEDULE_EXISTS", {"schedule_id": "reports"})]
        with pytest.raises(waymark.ScheduleExists) as taken:
            c.schedules.create("reports", workflow="echo-flow", cron=["* * * * *"])
        assert (taken.value.schedule_id, taken.value.code) == ("reports", grpc.StatusCode.ALREADY_EXISTS)
    server.stop(None)


@pytest.mark.asyncio
async def test_async_schedules() -> None:
    scripted = ScriptedSchedules()
    server, address = serve(scripted)
    async with waymark.AsyncClient(address, retry=FAST, namespace="payments") as c:
        await c.schedules.create("reports", **REPORTS)
        scripted.script = [UNAVAILABLE]
        moved = await c.schedules.update("reports", cron=["30 8 * * 1-5"])
        assert list(moved.spec.cron) == ["30 8 * * 1-5"] and moved.spec.time_zone == "America/New_York"
        assert list(scripted.requests[-1].update_mask.paths) == ["spec"]
        assert [s.id async for s in c.schedules.list()] == ["archive", "reports"]
        assert (await c.schedules.pause("reports", "holiday")).paused
        assert (await c.schedules.trigger("reports")).info.buffered_actions == 1
        assert (await c.schedules.backfill("reports", datetime(2026, 3, 2, tzinfo=timezone.utc), datetime(2026, 3, 3, tzinfo=timezone.utc))).queued == 3
        scripted.script = [UNAVAILABLE, missing("reports")]
        await c.schedules.delete("reports")
        scripted.script = [missing("reports")]
        with pytest.raises(waymark.ScheduleNotFound):
            await c.schedules.delete("reports")
        assert {r.namespace for r in scripted.requests} == {"payments"}
    server.stop(None)
