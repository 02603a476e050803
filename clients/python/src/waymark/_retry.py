"""The retry policy of unary calls (docs/clients.md "Retries of unary calls"): the backoff, what
is safe to repeat, and the per-call retrier both clients drive."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import grpc

from waymark.errors import Unavailable, WaymarkError
from waymark.v1 import run_service_pb2


@dataclass(frozen=True)
class Backoff:
    """Paces the reconnects of an event stream: the first wait is up to ``initial`` seconds, each
    further one up to twice as long, capped at ``maximum`` (full jitter). The stream gives up only
    when, for ``give_up_after`` seconds, no reconnect succeeded and no event arrived (0: never); a
    reconnect succeeds when the server accepts the connection, so a follower of a parked run
    (which gets no events) survives any number of restarts that each end within the window."""

    initial: float = 0.1
    maximum: float = 5.0
    give_up_after: float = 120.0

    def delay(self, attempt: int) -> float:
        return random.uniform(0, min(self.initial * 2.0**attempt, self.maximum))


@dataclass(frozen=True)
class RetryPolicy:
    """Paces the retries of unary calls (docs/clients.md): the first retry waits up to
    ``initial`` seconds, each further one up to twice as long, capped at ``maximum`` (full
    jitter); a call stops retrying once ``budget`` seconds have passed since it started, or when
    the next wait would pass its ``timeout``. A ``budget`` of 0 turns retries off."""

    initial: float = 0.1
    maximum: float = 5.0
    budget: float = 60.0


# Calls that are safe to repeat, by method: the table of docs/clients.md, which names the server
# behaviour each row relies on. Reads always; StartRun with an idempotency key, SendSignal with a
# signal id and DecideApproval with a request id (the server answers a repeat like the first call;
# the client always sets one); CancelRun (cancelling a cancelled run returns it unchanged);
# ResumeRun as a dry run, a plain resume and DRIFT_RECOVERY_ABANDON. A resume with invalidate or
# DRIFT_RECOVERY_RESTART is not (a repeat unpins the entries again, or starts a second new run):
# it is sent once, after waiting for a connection.
# RegisterFlow is too: the same content as the latest version again stores nothing and answers
# that version. So is PutMcpServer (a repeat puts the same registration); RemoveMcpServer is not
# (a repeat of an applied removal answers NOT_FOUND). PurgeRuns: a repeat deletes what still matches
# the same filter. CompareRuns is a read; ForkRun is safe with an
# idempotency key (the client always sets one: a repeat returns the first fork) or as a dry run.
# Of ScheduleService, the reads, UpdateSchedule, PauseSchedule and UnpauseSchedule (a repeat writes
# the same values), BackfillSchedule (each scheduled time's run has the key schedule:<id>:<time>,
# so a time already started is not started again) and DeleteSchedule (a retry answering
# SCHEDULE_NOT_FOUND is success, see gone_after_retry); CreateSchedule is not (a repeat of an
# applied create answers SCHEDULE_EXISTS), nor TriggerSchedule (a repeat queues a second run).
_READS = frozenset(
    {"GetRun", "ListRuns", "GetJournal", "ListWorkflows", "GetRunProvenance", "ListApprovals", "GetApproval", "CancelRun"}
    | {"CompareRuns", "PurgeRuns"}
    | {"RegisterFlow", "GetFlow", "ListFlows"}
    | {"PutMcpServer", "ListMcpServers"}
    | {"GetSchedule", "ListSchedules", "UpdateSchedule", "PauseSchedule", "UnpauseSchedule", "BackfillSchedule", "DeleteSchedule"}
)


# Of WorkerService: RegisterWorker replaces the declaration, Heartbeat extends the claim,
# CompleteTask is fenced (a repeat of an applied result journals nothing), ListTools is a read.
# PollTask is not (a poll whose answer was lost claimed a task): the worker polls again itself.
_WORKER_REPEATS = frozenset({"RegisterWorker", "Heartbeat", "CompleteTask", "ListTools"})


def repeatable(method: str, request: Any) -> bool:
    if method in _READS or method in _WORKER_REPEATS:
        return True
    if method == "StartRun":
        return bool(request.idempotency_key)
    if method == "ForkRun":
        return bool(request.dry_run or request.idempotency_key)
    if method == "SendSignal":
        return bool(request.signal_id)
    if method == "DecideApproval":
        return bool(request.request_id)
    if method == "ResumeRun":
        restart = request.drift_recovery == run_service_pb2.DRIFT_RECOVERY_RESTART
        return bool(request.dry_run) or (not request.invalidate and not restart)
    return False


def wrong_state_after_retry(name: str, retrier: Retrier, error: WaymarkError) -> bool:
    """A retried resume answered WRONG_STATE: an earlier attempt was applied and the run is
    executing (docs/clients.md); the client answers with the run as GetRun reads it."""
    return name == "ResumeRun" and retrier.tries > 1 and error.reason == "WRONG_STATE"


def gone_after_retry(name: str, retrier: Retrier, error: WaymarkError) -> bool:
    """A retried delete answered SCHEDULE_NOT_FOUND: an earlier attempt deleted the schedule and
    its answer was lost; the call succeeded."""
    return name == "DeleteSchedule" and retrier.tries > 1 and error.reason == "SCHEDULE_NOT_FOUND"


class Retrier:
    """One call's attempts: the timeout of each and the wait before the next.

    ``timeout`` (the call's own, seconds) bounds the whole call, retries included; without one
    each attempt gets the client's ``default_timeout`` and the policy's budget bounds the call.
    """

    def __init__(self, policy: RetryPolicy, timeout: float | None, default_timeout: float | None) -> None:
        self.policy = policy
        self.started = time.monotonic()
        self.deadline = self.started + timeout if timeout is not None else None
        self.default_timeout = default_timeout
        self.ceiling = policy.initial
        self.tries = 0

    def attempt_timeout(self) -> float | None:
        self.tries += 1
        if self.deadline is None:
            return self.default_timeout
        return max(self.deadline - time.monotonic(), 0.0)

    def connect_timeout(self) -> float:
        """How long a call that is sent once may wait for a connection before it is sent."""
        budget = self.policy.budget
        return budget if self.deadline is None else max(min(budget, self.deadline - time.monotonic()), 0.0)

    def next_wait(self, error: WaymarkError) -> float | None:
        """Seconds to wait before retrying after ``error``, or None: do not retry.

        UNAVAILABLE (also how grpcio reports a refused or dropped connection) is retried;
        RESOURCE_EXHAUSTED only when the server sent google.rpc.RetryInfo, and not before its
        delay. Every other code is final.
        """
        if self.policy.budget <= 0:
            return None
        if error.code == grpc.StatusCode.UNAVAILABLE:
            least = error.retry_delay or 0.0
        elif error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry_delay is not None:
            least = error.retry_delay
        else:
            return None
        wait = max(random.uniform(0, self.ceiling), least)
        now = time.monotonic()
        if now - self.started + wait > self.policy.budget:
            return None
        if self.deadline is not None and self.deadline - now <= wait:
            return None
        self.ceiling = min(self.ceiling * 2, self.policy.maximum)
        return wait


def not_sent(what: str) -> Unavailable:
    error = Unavailable(f"no connection to the server {what}: the call was not sent", code=grpc.StatusCode.UNAVAILABLE)
    error.not_sent = True
    return error
