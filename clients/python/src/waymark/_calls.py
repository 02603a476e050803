"""What the sync and asyncio clients share: options, request building, backoff."""

from __future__ import annotations

import json
import random
import secrets
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import grpc

from waymark._json import from_value, to_value
from waymark.enums import RunStatus
from waymark.errors import AlreadyResolved, RunCancelled, RunFailed, Unavailable, WaymarkError
from waymark.v1 import run_pb2, run_service_pb2, signal_service_pb2

_R = TypeVar("_R", signal_service_pb2.SendSignalResponse, signal_service_pb2.DecideApprovalResponse)

DEFAULT_ADDRESS = "127.0.0.1:50051"

# round_robin spreads calls over every address a "dns:///" target resolves to (a headless
# Kubernetes Service). Retries are not grpcio's: Retrier below applies the policy of
# docs/clients.md, which needs the request to decide what is safe to repeat.
SERVICE_CONFIG: dict[str, Any] = {"loadBalancingConfig": [{"round_robin": {}}]}

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.service_config", json.dumps(SERVICE_CONFIG)),
    # Keep follow-streams alive through proxies; 30 s is the smallest client ping interval most
    # servers and proxies accept.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.max_receive_message_length", 16 << 20),
    # Reconnect as fast as calls retry (grpcio's default starts at 1 s and grows to 2 min), so a
    # server back from a restart is found within the retry policy's own backoff.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5_000),
]


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
# that version.
_READS = frozenset(
    {"GetRun", "ListRuns", "GetJournal", "ListWorkflows", "GetRunProvenance", "ListApprovals", "GetApproval", "CancelRun"}
    | {"RegisterFlow", "GetFlow", "ListFlows"}
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


def readiness_request() -> bytes:
    """grpc.health.v1.HealthCheckRequest for the whole server (service ""): no fields set."""
    return b""


def serving(response: bytes) -> bool:
    """Whether a grpc.health.v1.HealthCheckResponse says SERVING (field 1, varint 1). Decoded by
    hand, so the client needs no grpcio-health-checking."""
    return response == b"\x08\x01"


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


def credentials(tls: bool | grpc.ChannelCredentials) -> grpc.ChannelCredentials | None:
    if tls is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls, grpc.ChannelCredentials):
        return tls
    return None


def server_name_options(server_name: str | None) -> list[tuple[str, str]]:
    return [("grpc.ssl_target_name_override", server_name)] if server_name else []


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def random_id() -> str:
    return secrets.token_hex(12)


def start_run(
    namespace: str,
    workflow: str,
    input: Any,
    *,
    idempotency_key: str | None,
    wait: bool,
    labels: Mapping[str, str] | None,
    budget_usd: float | None,
    dry_run: bool,
    run_timeout: float | timedelta | None = None,
) -> run_service_pb2.StartRunRequest:
    request = run_service_pb2.StartRunRequest(
        namespace=namespace,
        workflow=workflow,
        # Without a key of the caller's, one for this call, so the client's retries start one run.
        idempotency_key=idempotency_key or f"client:{uuid.uuid4()}",
        wait=wait,
        dry_run=dry_run,
        labels=dict(labels or {}),
    )
    value = to_value(input)
    if value is not None:
        request.input.CopyFrom(value)
    if budget_usd is not None:
        request.budget_usd = budget_usd
    if run_timeout is not None:
        # The run timeout (seconds, or a timedelta); the server refuses zero, negative and > 3650 days.
        seconds = run_timeout.total_seconds() if isinstance(run_timeout, timedelta) else float(run_timeout)
        request.timeout.FromNanoseconds(round(seconds * 1_000_000_000))
    return request


def list_runs(
    namespace: str,
    *,
    statuses: Iterable[int],
    workflow: str,
    labels: Mapping[str, str] | None,
    parent_run_id: str,
    page_size: int,
) -> run_service_pb2.ListRunsRequest:
    return run_service_pb2.ListRunsRequest(
        namespace=namespace,
        statuses=[run_pb2.RunStatus.ValueType(int(s)) for s in statuses],
        workflow=workflow,
        labels=dict(labels or {}),
        parent_run_id=parent_run_id,
        page_size=page_size,
    )


def get_journal(namespace: str, run_id: str, after_seq: int | None, page_size: int) -> run_service_pb2.GetJournalRequest:
    request = run_service_pb2.GetJournalRequest(namespace=namespace, run_id=run_id, page_size=page_size)
    if after_seq is not None:
        request.after_seq = after_seq
    return request


def stream_events(namespace: str, run_id: str, after_seq: int, follow_suspended: bool) -> run_service_pb2.StreamRunEventsRequest:
    request = run_service_pb2.StreamRunEventsRequest(namespace=namespace, run_id=run_id, follow_suspended=follow_suspended)
    if after_seq >= 0:
        request.after_seq = after_seq
    return request


def send_signal(
    namespace: str, run_id: str, name: str, payload: Any, signal_id: str | None
) -> signal_service_pb2.SendSignalRequest:
    request = signal_service_pb2.SendSignalRequest(
        namespace=namespace, run_id=run_id, name=name, signal_id=signal_id or random_id()
    )
    value = to_value(payload)
    if value is not None:
        request.payload.CopyFrom(value)
    return request


def list_approvals(
    namespace: str,
    *,
    run_id: str,
    workflow: str,
    labels: Mapping[str, str] | None,
    states: Iterable[int],
    page_size: int,
) -> signal_service_pb2.ListApprovalsRequest:
    return signal_service_pb2.ListApprovalsRequest(
        namespace=namespace,
        run_id=run_id,
        workflow=workflow,
        labels=dict(labels or {}),
        states=[run_pb2.ApprovalState.ValueType(int(s)) for s in states],
        page_size=page_size,
    )


def decide(
    namespace: str,
    approval_id: str,
    approve: bool,
    *,
    by: str,
    comment: str,
    payload: Any,
    request_id: str | None,
) -> signal_service_pb2.DecideApprovalRequest:
    request = signal_service_pb2.DecideApprovalRequest(
        namespace=namespace,
        id=approval_id,
        approve=approve,
        by=by,
        comment=comment,
        request_id=request_id or random_id(),
    )
    value = to_value(payload)
    if value is not None:
        request.payload.CopyFrom(value)
    return request


def resume_run(
    namespace: str,
    run_id: str,
    *,
    dry_run: bool,
    invalidate: Iterable[int],
    drift_recovery: int,
) -> run_service_pb2.ResumeRunRequest:
    return run_service_pb2.ResumeRunRequest(
        namespace=namespace,
        run_id=run_id,
        dry_run=dry_run,
        invalidate=list(invalidate),
        drift_recovery=run_service_pb2.DriftRecovery.ValueType(int(drift_recovery)),
    )


def started(response: run_service_pb2.StartRunResponse, request: run_service_pb2.StartRunRequest, generated: bool) -> run_service_pb2.StartRunResponse:
    """created = false for a key the client generated can only be its own retry: created."""
    if generated:
        response.created = True
    return response


def signal_duplicate(response: signal_service_pb2.SendSignalResponse) -> bool:
    """A repeat of a signal id whose first delivery resolved (or lost) a wait at ``seq``."""
    return not response.applied and response.reason == "duplicate" and not response.buffered and response.seq > 0


def signal_outcome(response: signal_service_pb2.SendSignalResponse, entry: run_pb2.JournalEntry | None) -> None:
    """Marks a duplicate with the first delivery's outcome: applied when its entry is RESOLVED,
    lost (already_resolved) when NOOP."""
    if entry is None or entry.seq != response.seq:
        return
    if entry.status == run_pb2.ENTRY_STATUS_RESOLVED:
        response.applied = True
    elif entry.status == run_pb2.ENTRY_STATUS_NOOP:
        response.reason = "already_resolved"


def not_ready(address: str, timeout: float, error: WaymarkError | None) -> Unavailable:
    if error is None:
        what = "is not serving"
    elif error.code == grpc.StatusCode.DEADLINE_EXCEEDED:
        what = f"did not answer within {timeout} s"
    else:
        what = f"cannot be reached: {error.message}"
    return Unavailable(f"{address} {what}", code=grpc.StatusCode.UNAVAILABLE)


def decided(
    response: signal_service_pb2.DecideApprovalResponse, request: signal_service_pb2.DecideApprovalRequest
) -> signal_service_pb2.DecideApprovalResponse:
    """A duplicate (a repeat of the request id: a retry, or the caller's) reports the first
    decision's outcome: applied when the approval is decided this way by the same ``by``."""
    if not response.applied and response.reason == "duplicate":
        want = run_pb2.APPROVAL_STATE_APPROVED if request.approve else run_pb2.APPROVAL_STATE_DENIED
        if response.approval.state == want and response.approval.decided_by == request.by:
            response.applied = True
        else:
            response.reason = "already_resolved"
    return response


def resolved(response: _R, what: str) -> _R:
    """The response, unless another resolution already closed the wait: then AlreadyResolved."""
    if not response.applied and response.reason == "already_resolved":
        err = AlreadyResolved(
            f"{what} was already resolved by another decision, signal, timeout or cancellation; nothing was changed",
            code=grpc.StatusCode.FAILED_PRECONDITION,
            reason=AlreadyResolved.reason_name or "",
        )
        err.response = response
        raise err
    return response


def run_outcome(run_id: str, status: int, output: Any, error: run_pb2.RunError) -> Any:
    """The output of a run that ended SUCCEEDED (as plain JSON); RunFailed for FAILED or CANCELLED."""
    if status == RunStatus.SUCCEEDED:
        return from_value(output)
    raise (RunCancelled if status == RunStatus.CANCELLED else RunFailed)(
        run_id,
        RunStatus(status),
        name=error.name,
        message=error.message,
        reason=error.reason,
        details=from_value(error.details) if error.HasField("details") else None,
    )


def run_outcome_or_still(run_id: str, run: run_pb2.Run) -> Any:
    """run_outcome for a run that ended; an error for one still going after its stream ended."""
    if RunStatus(run.status).terminal:
        return run_outcome(run_id, run.status, run.output, run.error)
    raise WaymarkError(f"the event stream of run {run_id} ended while the run is {RunStatus(run.status).name}")


class Deadline:
    """A point in time ``timeout`` seconds from now, or none."""

    def __init__(self, timeout: float | None) -> None:
        self.at = time.monotonic() + timeout if timeout is not None else None

    def remaining(self) -> float | None:
        return None if self.at is None else max(self.at - time.monotonic(), 0.0)

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at


@dataclass(frozen=True)
class Reconnect:
    """One reconnect of an event stream, as ``on_reconnect`` receives it."""

    attempt: int
    """Reconnects since the stream last succeeded (an event arrived or a reconnect was answered), from 1."""
    after_seq: int
    """The seq the stream resumes after: the last one delivered, -1 when none yet."""
    error: WaymarkError
    """What ended the previous connection (:class:`waymark.Unavailable` for a dropped one)."""


def reconnectable(error: WaymarkError) -> bool:
    """A stream reconnects on what a unary call retries: UNAVAILABLE (also a dropped or refused
    connection) and RESOURCE_EXHAUSTED with RetryInfo."""
    return error.code == grpc.StatusCode.UNAVAILABLE or (
        error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry_delay is not None
    )


class Follow:
    """The state of one ``events`` call across its reconnects, shared by the sync and asyncio
    clients: the last seq yielded, the backoff, and the give-up clock (docs/clients.md). The clock
    runs from the first failure since the last success, an event or a reconnect the server
    answered (a GetRun of the run: a follow stream of a parked run sends nothing)."""

    def __init__(self, backoff: Backoff, after_seq: int | None, timeout: float | None) -> None:
        self.backoff = backoff
        self.last = after_seq if after_seq is not None else -1
        self.deadline = Deadline(timeout)
        self.failing_since: float | None = None
        self.attempt = 0
        self.error: WaymarkError | None = None

    def connect_timeout(self) -> float | None:
        """How long to wait for a connection: the rest of the give-up window and of the timeout."""
        limits = [] if self.deadline.at is None else [self.deadline.at - time.monotonic()]
        if self.backoff.give_up_after > 0 and self.failing_since is not None:
            limits.append(self.failing_since + self.backoff.give_up_after - time.monotonic())
        return max(min(limits), 0.0) if limits else None

    def gave_up(self, address: str) -> WaymarkError:
        if self.deadline.expired():
            return WaymarkError("the event stream's timeout passed", code=grpc.StatusCode.DEADLINE_EXCEEDED)
        if self.error is not None and self.error.code == grpc.StatusCode.UNAVAILABLE:
            return self.error
        return Unavailable(
            f"no answer from {address} and no event for {self.backoff.give_up_after} s; the event stream gave up",
            code=grpc.StatusCode.UNAVAILABLE,
        )

    @property
    def reconnecting(self) -> bool:
        return self.error is not None

    def answered(self) -> None:
        """The server answered a reconnect: the clock and the backoff start over."""
        self.failing_since, self.attempt, self.error = None, 0, None

    def stream_timeout(self) -> float | None:
        return self.deadline.remaining()

    def fresh(self, event: run_pb2.RunEvent) -> bool:
        """Whether to yield ``event``: not one delivered before a reconnect."""
        if event.seq <= self.last:
            return False
        self.last = event.seq
        self.failing_since, self.attempt = None, 0
        return True

    def failed(self, error: WaymarkError) -> tuple[Reconnect, float] | None:
        """After ``error``: the reconnect to report and the seconds to wait first, or None when
        the stream gives up (no success for the give-up window)."""
        self.error = error
        now = time.monotonic()
        if self.failing_since is None:
            self.failing_since = now
        wait = max(self.backoff.delay(self.attempt), error.retry_delay or 0.0)
        remaining = self.deadline.remaining()
        if remaining is not None:
            wait = min(wait, remaining)
        window = self.backoff.give_up_after
        if window > 0 and now - self.failing_since + wait > window:
            return None
        self.attempt += 1
        return Reconnect(self.attempt, self.last, error), wait
