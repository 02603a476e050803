"""Schedules (ScheduleService, docs/schedules.md): runs of a workflow or flow started on a calendar,
exactly once per tick. The calls as operations (``_steps.py``) and ``client.schedules`` of each
client, which runs them in its I/O style. A schedule is written with keyword arguments (seconds
or ``timedelta`` for durations, ``datetime`` for times, overlap policies by name) and read back as
the generated ``waymark.v1.schedule_service_pb2.Schedule``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol, Union

from google.protobuf import duration_pb2

from waymark._json import to_value
from waymark._runs import pages
from waymark._shells import async_iter, awaitable, blocking, blocking_iter
from waymark._steps import Core, Items, Op
from waymark._unary import call
from waymark.enums import ScheduleOverlapPolicy
from waymark.v1 import schedule_service_pb2 as pb
from waymark.v1 import schedule_service_pb2_grpc

if TYPE_CHECKING:
    from waymark.aio import AsyncClient
    from waymark.client import Client

__all__ = ["AsyncSchedules", "Schedules"]

Seconds = Union[float, timedelta]
"""A duration: seconds, or a ``timedelta``."""
Overlap = Union[ScheduleOverlapPolicy, int, str]
"""An overlap policy: :class:`waymark.ScheduleOverlapPolicy`, its number or its name (``"BUFFER_ONE"``)."""

# The keyword arguments of create and update, by the part of the schedule (the update mask's path)
# each belongs to.
_PARTS: dict[str, tuple[str, ...]] = {
    "spec": ("cron", "intervals", "time_zone", "start_at", "end_at", "jitter", "exclude"),
    "action": ("workflow", "input", "labels", "budget_usd", "run_timeout"),
    "policies": ("overlap", "catchup_window", "pause_on_failure", "budget_pause"),
    "remaining_actions": ("remaining_actions",),
}
_PART_OF = {key: part for part, keys in _PARTS.items() for key in keys}


class _Schedules(Protocol):
    """What the schedule operations read of ``client.schedules``."""

    _client: Core
    stub: Any


def _set_duration(target: duration_pb2.Duration, value: Seconds) -> None:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    target.FromNanoseconds(round(seconds * 1_000_000_000))


def overlap_policy(value: Overlap | None) -> int:
    """The number of an overlap policy given as the enum, a number or a name; 0 for None."""
    if value is None:
        return 0
    if isinstance(value, str):
        try:
            return int(ScheduleOverlapPolicy[value.upper()])
        except KeyError:
            names = ", ".join(p.name for p in ScheduleOverlapPolicy if p)
            raise ValueError(f"unknown overlap policy {value!r}; one of {names}") from None
    return int(ScheduleOverlapPolicy(value))


def _apply(schedule: pb.Schedule, key: str, value: Any) -> None:
    """Writes one keyword argument into ``schedule``; None clears an optional field."""
    spec, action, policies = schedule.spec, schedule.action, schedule.policies
    if key in ("cron", "exclude"):
        if isinstance(value, str):
            raise TypeError(f"{key} takes a list of cron expressions, not one string")
        field = spec.cron if key == "cron" else spec.exclude
        del field[:]
        field.extend(value or ())
    elif key == "intervals":
        del spec.intervals[:]
        for interval in value or ():
            every, offset = interval if isinstance(interval, tuple) else (interval, None)
            added = spec.intervals.add()
            _set_duration(added.every, every)
            if offset is not None:
                _set_duration(added.offset, offset)
    elif key == "time_zone":
        spec.time_zone = value or ""
    elif key in ("start_at", "end_at"):
        if value is not None and not isinstance(value, datetime):
            raise TypeError(f"{key} takes a datetime, not {type(value).__name__}")
        if key == "start_at":
            spec.ClearField("start_time")
            if value is not None:
                spec.start_time.FromDatetime(value)
        else:
            spec.ClearField("end_time")
            if value is not None:
                spec.end_time.FromDatetime(value)
    elif key == "jitter":
        spec.ClearField("jitter")
        if value is not None:
            _set_duration(spec.jitter, value)
    elif key == "run_timeout":
        action.ClearField("timeout")
        if value is not None:
            _set_duration(action.timeout, value)
    elif key == "catchup_window":
        policies.ClearField("catchup_window")
        if value is not None:
            _set_duration(policies.catchup_window, value)
    elif key == "workflow":
        action.workflow = value
    elif key == "input":
        action.ClearField("input")
        converted = to_value(value)
        if converted is not None:
            action.input.CopyFrom(converted)
    elif key == "labels":
        action.labels.clear()
        action.labels.update(dict(value or {}))
    elif key == "budget_usd":
        action.ClearField("budget_usd")
        if value is not None:
            action.budget_usd = float(value)
    elif key == "overlap":
        policies.overlap = pb.ScheduleOverlapPolicy.ValueType(overlap_policy(value))
    elif key == "pause_on_failure":
        policies.pause_on_failure = bool(value)
    elif key == "budget_pause":
        policies.ClearField("budget_pause")
        if value is not None:
            limit_usd, window = value
            policies.budget_pause.limit_usd = float(limit_usd)
            _set_duration(policies.budget_pause.window, window)
    elif key == "remaining_actions":
        schedule.ClearField("remaining_actions")
        if value is not None:
            schedule.remaining_actions = int(value)
    else:
        raise TypeError(f"unknown schedule field {key!r}")


def create(
    schedules: _Schedules,
    schedule_id: str,
    *,
    workflow: str,
    input: Any = None,
    cron: Iterable[str] = (),
    intervals: Iterable[Seconds | tuple[Seconds, Seconds]] = (),
    time_zone: str = "",
    start_at: datetime | None = None,
    end_at: datetime | None = None,
    jitter: Seconds | None = None,
    exclude: Iterable[str] = (),
    labels: Mapping[str, str] | None = None,
    budget_usd: float | None = None,
    run_timeout: Seconds | None = None,
    overlap: Overlap | None = None,
    catchup_window: Seconds | None = None,
    pause_on_failure: bool = False,
    budget_pause: tuple[float, Seconds] | None = None,
    remaining_actions: int | None = None,
    paused: bool = False,
    note: str = "",
    timeout: float | None = None,
) -> Op[pb.Schedule]:
    """Creates schedule ``schedule_id`` in the client's namespace and returns it as stored, with
    its next times (``info.future_action_times``). Each tick starts a run of ``workflow`` (a
    workflow or a registered flow) with the JSON ``input``, ``labels``, ``budget_usd`` and
    ``run_timeout``, as ``start_run`` would; every run also carries the labels
    ``waymark.schedule_id`` and ``waymark.scheduled_at``.

    When it ticks: ``cron`` expressions (5 fields, minute first, or 6, second first; a
    ``"TZ=Zone "`` prefix names one's own zone) read in ``time_zone`` (IANA, default UTC), and
    ``intervals`` (each ``every`` seconds or ``timedelta`` from the Unix epoch, or an ``(every,
    offset)`` pair), between ``start_at`` and ``end_at``, each tick's run up to ``jitter`` late,
    minus the ticks the ``exclude`` expressions match. Policies: ``overlap`` (a
    :class:`waymark.ScheduleOverlapPolicy` or its name, default SKIP), ``catchup_window`` (default
    one minute), ``pause_on_failure``, ``budget_pause`` (``(limit_usd, window)``: pause when its
    runs spend more than that over the trailing window). ``remaining_actions`` limits the ticks
    it takes (None: unlimited). ``paused`` creates it paused, with ``note`` saying why.

    An id the namespace has raises :class:`waymark.ScheduleExists`; a spec, or an input the
    workflow's schema refuses, :class:`waymark.InvalidArgument` naming the field
    (``schedule.spec.cron[0]``), and nothing is stored. Sent once, after waiting for a
    connection: a repeat of an applied create would raise ScheduleExists.
    """
    schedule = pb.Schedule(id=schedule_id, paused=paused, note=note)
    given = {
        "workflow": workflow, "input": input, "cron": cron, "intervals": intervals, "time_zone": time_zone, "start_at": start_at,
        "end_at": end_at, "jitter": jitter, "exclude": exclude, "labels": labels, "budget_usd": budget_usd, "run_timeout": run_timeout,
        "overlap": overlap, "catchup_window": catchup_window, "pause_on_failure": pause_on_failure, "budget_pause": budget_pause,
        "remaining_actions": remaining_actions,
    }
    for key, value in given.items():
        _apply(schedule, key, value)
    core = schedules._client
    request = pb.CreateScheduleRequest(namespace=core.namespace, schedule=schedule)
    response: pb.CreateScheduleResponse = yield from call(core, "CreateSchedule", schedules.stub.CreateSchedule, request, timeout)
    return response.schedule


def get(schedules: _Schedules, schedule_id: str, *, timeout: float | None = None) -> Op[pb.Schedule]:
    """A schedule with its counters, recent actions (``info.recent_actions``: each run's id,
    scheduled time and cause) and next ten times. Raises :class:`waymark.ScheduleNotFound` when the
    namespace has none of that id."""
    core = schedules._client
    request = pb.GetScheduleRequest(namespace=core.namespace, schedule_id=schedule_id)
    response: pb.GetScheduleResponse = yield from call(core, "GetSchedule", schedules.stub.GetSchedule, request, timeout)
    return response.schedule


def list_schedules(schedules: _Schedules, *, page_size: int = 0, timeout: float | None = None) -> Items[pb.Schedule]:
    """Iterates over the namespace's schedules by id, each with its next time only, fetching pages
    (``page_size``, 0: the server's default) as the loop advances; ``timeout`` bounds each page."""
    core = schedules._client
    request = pb.ListSchedulesRequest(namespace=core.namespace, page_size=page_size)
    return (yield from pages(core, "ListSchedules", schedules.stub.ListSchedules, request, lambda page: page.schedules, timeout))


def update(schedules: _Schedules, /, schedule_id: str, *, timeout: float | None = None, **changes: Any) -> Op[pb.Schedule]:
    """Changes what ``changes`` names (the keyword arguments of :meth:`create`, but ``paused`` and
    ``note``: pause and unpause have their own calls) and keeps the rest: the schedule is read,
    and each part a change touches (spec, action, policies, remaining actions) is sent whole with
    an update mask, so ``update("reports", time_zone="Asia/Tokyo")`` keeps the cron expressions.
    None clears an optional value (``remaining_actions=None``: unlimited). A new spec ticks from now
    on; runs already started are untouched. Retried like a read: a repeat writes the same values."""
    unknown = sorted(set(changes) - set(_PART_OF))
    if unknown:
        hint = " (pause and unpause have their own calls)" if {"paused", "note"} & set(unknown) else ""
        raise TypeError(f"update cannot change {', '.join(unknown)}{hint}")
    if not changes:
        raise TypeError("nothing to update: name a field of the spec, the action, the policies or remaining_actions")
    current = yield from get(schedules, schedule_id, timeout=timeout)
    schedule = pb.Schedule()
    schedule.CopyFrom(current)
    schedule.ClearField("info")
    for key, value in changes.items():
        _apply(schedule, key, value)
    paths = [part for part in _PARTS if any(_PART_OF[key] == part for key in changes)]
    core = schedules._client
    request = pb.UpdateScheduleRequest(namespace=core.namespace, schedule_id=schedule_id, schedule=schedule)
    request.update_mask.paths.extend(paths)
    response: pb.UpdateScheduleResponse = yield from call(core, "UpdateSchedule", schedules.stub.UpdateSchedule, request, timeout)
    return response.schedule


def pause(schedules: _Schedules, schedule_id: str, note: str = "", *, timeout: float | None = None) -> Op[pb.Schedule]:
    """Pauses a schedule: it takes no ticks, and triggers and backfills wait until it is unpaused.
    ``note`` says why, and by whom (the schedule's ``note``)."""
    core = schedules._client
    request = pb.PauseScheduleRequest(namespace=core.namespace, schedule_id=schedule_id, note=note)
    response: pb.PauseScheduleResponse = yield from call(core, "PauseSchedule", schedules.stub.PauseSchedule, request, timeout)
    return response.schedule


def unpause(schedules: _Schedules, schedule_id: str, note: str = "", *, timeout: float | None = None) -> Op[pb.Schedule]:
    """Unpauses a schedule; ticks that fell while it was paused are neither started nor caught up."""
    core = schedules._client
    request = pb.UnpauseScheduleRequest(namespace=core.namespace, schedule_id=schedule_id, note=note)
    response: pb.UnpauseScheduleResponse = yield from call(core, "UnpauseSchedule", schedules.stub.UnpauseSchedule, request, timeout)
    return response.schedule


def trigger(schedules: _Schedules, schedule_id: str, *, overlap: Overlap | None = None, timeout: float | None = None) -> Op[pb.Schedule]:
    """Queues one run now (scheduled at the current time) under ``overlap`` (default the
    schedule's); the sweeper starts it within about a second (``info.buffered_actions`` counts it
    until then). Sent once, after waiting for a connection: a repeat would queue a second run."""
    core = schedules._client
    request = pb.TriggerScheduleRequest(
        namespace=core.namespace, schedule_id=schedule_id, overlap=pb.ScheduleOverlapPolicy.ValueType(overlap_policy(overlap))
    )
    response: pb.TriggerScheduleResponse = yield from call(core, "TriggerSchedule", schedules.stub.TriggerSchedule, request, timeout)
    return response.schedule


def backfill(
    schedules: _Schedules, schedule_id: str, start: datetime, end: datetime, *, overlap: Overlap | None = None, timeout: float | None = None
) -> Op[pb.BackfillScheduleResponse]:
    """Queues a run for every tick of the schedule in [``start``, ``end``] (at most 1,000 per
    call), outside the catch-up window too, under ``overlap`` (default the schedule's); the
    answer's ``queued`` says how many. A scheduled time that already has its run is not run again,
    so it is retried like a read."""
    core = schedules._client
    request = pb.BackfillScheduleRequest(
        namespace=core.namespace, schedule_id=schedule_id, overlap=pb.ScheduleOverlapPolicy.ValueType(overlap_policy(overlap))
    )
    request.start_time.FromDatetime(start)
    request.end_time.FromDatetime(end)
    response: pb.BackfillScheduleResponse = yield from call(core, "BackfillSchedule", schedules.stub.BackfillSchedule, request, timeout)
    return response


def delete(schedules: _Schedules, schedule_id: str, *, timeout: float | None = None) -> Op[None]:
    """Deletes a schedule; the runs it started are kept. Raises :class:`waymark.ScheduleNotFound`
    when the namespace has none of that id, unless an earlier attempt of this call deleted it (a
    retry answering SCHEDULE_NOT_FOUND is success)."""
    core = schedules._client
    request = pb.DeleteScheduleRequest(namespace=core.namespace, schedule_id=schedule_id)
    yield from call(core, "DeleteSchedule", schedules.stub.DeleteSchedule, request, timeout)
    return None


class Schedules:
    """``client.schedules``: creates, reads, changes, pauses, triggers, backfills and deletes
    schedules (docs/schedules.md). ``stub`` is the generated ScheduleService stub."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = schedule_service_pb2_grpc.ScheduleServiceStub(client._channel)

    create = blocking(create)
    get = blocking(get)
    list = blocking_iter(list_schedules)
    update = blocking(update)
    pause = blocking(pause)
    unpause = blocking(unpause)
    trigger = blocking(trigger)
    backfill = blocking(backfill)
    delete = blocking(delete)


class AsyncSchedules:
    """``client.schedules`` of the asyncio client; see :class:`waymark.client.Schedules`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = schedule_service_pb2_grpc.ScheduleServiceStub(client._channel)

    create = awaitable(create)
    get = awaitable(get)
    list = async_iter(list_schedules)
    update = awaitable(update)
    pause = awaitable(pause)
    unpause = awaitable(unpause)
    trigger = awaitable(trigger)
    backfill = awaitable(backfill)
    delete = awaitable(delete)

