"""Friendly names for the API's enums, without the generated module.

Each is an :class:`enum.IntEnum` whose values are the proto numbers, so it converts the field
of a message (``RunStatus(run.status) == RunStatus.SUCCEEDED``, ``RunStatus(run.status).name``;
``mypy --strict`` refuses comparing the field with the enum unconverted) and is accepted
wherever the client takes a status, a state or a recovery. tests/test_enums.py checks them against the generated descriptors.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ApprovalState", "DriftRecovery", "EntryStatus", "RunStatus", "ScheduleActionCause", "ScheduleOverlapPolicy", "WaitFor"]


class RunStatus(IntEnum):
    """Where a run is in its lifecycle (waymark.v1.RunStatus)."""

    UNSPECIFIED = 0
    PENDING = 1
    RUNNING = 2
    SUSPENDED = 3
    SUCCEEDED = 4
    FAILED = 5
    CANCELLED = 6

    @property
    def terminal(self) -> bool:
        """True once the run has ended: SUCCEEDED, FAILED or CANCELLED."""
        return self in (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class EntryStatus(IntEnum):
    """Where a journal entry stands (waymark.v1.EntryStatus)."""

    UNSPECIFIED = 0
    RUNNING = 1
    OK = 2
    ERROR = 3
    CANCELLED = 4
    SUSPENDED = 5
    RESOLVED = 6
    NOOP = 7
    INFO = 8


class ApprovalState(IntEnum):
    """Where an approval stands (waymark.v1.ApprovalState)."""

    UNSPECIFIED = 0
    PENDING = 1
    APPROVED = 2
    DENIED = 3
    TIMED_OUT = 4
    CANCELLED = 5


class DriftRecovery(IntEnum):
    """How :meth:`waymark.Client.resume` recovers a run whose workflow changed (waymark.v1.DriftRecovery)."""

    UNSPECIFIED = 0
    RESTART = 1
    ABANDON = 2


class WaitFor(IntEnum):
    """What :meth:`waymark.Client.start_run` waits for (waymark.v1.WaitFor; docs/api.md "Waiting for a run")."""

    UNSPECIFIED = 0
    #: The first park of any kind (a timer or a retry backoff included), or the end: what ``wait=True`` does.
    FIRST_PARK = 1
    #: The end, or a park on an approval or a signal; timers, backoffs, remote tool calls and child runs are waited through.
    OUTSIDE_INPUT = 2
    #: The end: SUCCEEDED, FAILED or CANCELLED.
    END = 3


class ScheduleOverlapPolicy(IntEnum):
    """What a schedule's tick does while a run it started is still open (waymark.v1.ScheduleOverlapPolicy,
    Temporal's; docs/schedules.md "Overlap policies"). UNSPECIFIED: SKIP on a schedule, the schedule's own
    policy on a trigger or a backfill."""

    UNSPECIFIED = 0
    SKIP = 1
    BUFFER_ONE = 2
    BUFFER_ALL = 3
    CANCEL_OTHER = 4
    TERMINATE_OTHER = 5
    ALLOW_ALL = 6


class ScheduleActionCause(IntEnum):
    """Why a schedule started a run (waymark.v1.ScheduleActionCause): a tick of its spec, a trigger or a backfill."""

    UNSPECIFIED = 0
    TICK = 1
    TRIGGER = 2
    BACKFILL = 3
