"""What the sync and asyncio clients share: options, request building, backoff."""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from waymark._json import from_value, to_value
from waymark.enums import RunStatus
from waymark.errors import AlreadyResolved, RunFailed, Unavailable, WaymarkError
from waymark.v1 import run_pb2, run_service_pb2, signal_service_pb2

_R = TypeVar("_R", signal_service_pb2.SendSignalResponse, signal_service_pb2.DecideApprovalResponse)

DEFAULT_ADDRESS = "127.0.0.1:50051"

# round_robin spreads calls over every address a "dns:///" target resolves to (a headless
# Kubernetes Service). Retries are not grpcio's: Retrier below applies the policy of
# docs/clients.md, which needs the request to decide what is safe to repeat.
SERVICE_CONFIG = {"loadBalancingConfig": [{"round_robin": {}}]}

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


# Calls that are safe to repeat, by method. Reads always; StartRun with an idempotency key,
# SendSignal with a signal id and DecideApproval with a request id (the server answers a repeat
# like the first call; the client always sets one); CancelRun (cancelling a cancelled run returns
# it unchanged). ResumeRun only as a dry run: a repeated resume executes the run again,
# invalidates again, or with DRIFT_RECOVERY_RESTART starts a second new run.
_READS = frozenset(
    {"GetRun", "ListRuns", "GetJournal", "ListWorkflows", "GetRunProvenance", "ListApprovals", "GetApproval", "CancelRun"}
)


def repeatable(method: str, request: Any) -> bool:
    if method in _READS:
        return True
    if method == "StartRun":
        return bool(request.idempotency_key)
    if method == "SendSignal":
        return bool(request.signal_id)
    if method == "DecideApproval":
        return bool(request.request_id)
    if method == "ResumeRun":
        return bool(request.dry_run)
    return False


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

    def attempt_timeout(self) -> float | None:
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
    return Unavailable(f"no connection to the server {what}: the call was not sent", code=grpc.StatusCode.UNAVAILABLE)


def credentials(tls: bool | grpc.ChannelCredentials) -> grpc.ChannelCredentials | None:
    if tls is True:
        return grpc.ssl_channel_credentials()
    if isinstance(tls, grpc.ChannelCredentials):
        return tls
    return None


def metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def random_id() -> str:
    return secrets.token_hex(12)


def reconnectable(error: grpc.RpcError) -> bool:
    """The server went away or is restarting: UNAVAILABLE (also what a dropped connection gives)."""
    call: Any = error  # a grpc.Call or an AioRpcError, as in errors.error_from_rpc
    return hasattr(call, "code") and call.code() == grpc.StatusCode.UNAVAILABLE


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
) -> run_service_pb2.StartRunRequest:
    request = run_service_pb2.StartRunRequest(
        namespace=namespace,
        workflow=workflow,
        # Without a key of the caller's, one for this call, so the client's retries start one run.
        idempotency_key=idempotency_key or f"client:{random_id()}",
        wait=wait,
        dry_run=dry_run,
        labels=dict(labels or {}),
    )
    value = to_value(input)
    if value is not None:
        request.input.CopyFrom(value)
    if budget_usd is not None:
        request.budget_usd = budget_usd
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
    raise RunFailed(
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


class Follow:
    """The state of one ``events`` call across its reconnects, shared by the sync and asyncio
    clients: the last seq yielded, the backoff, and the give-up clock, which a successful connect
    and an event both reset (a follower of a parked run gets no events for as long as it waits)."""

    def __init__(self, backoff: Backoff, after_seq: int | None, timeout: float | None) -> None:
        self.backoff = backoff
        self.last = after_seq if after_seq is not None else -1
        self.deadline = Deadline(timeout)
        self.quiet_since = time.monotonic()
        self.began = self.quiet_since
        self.attempt = 0
        self.error: WaymarkError | None = None

    def connect_timeout(self) -> float | None:
        """How long to wait for a connection: the rest of the give-up window and of the timeout."""
        limits = [] if self.deadline.at is None else [self.deadline.at - time.monotonic()]
        if self.backoff.give_up_after > 0:
            limits.append(self.quiet_since + self.backoff.give_up_after - time.monotonic())
        return max(min(limits), 0.0) if limits else None

    def gave_up(self, address: str) -> WaymarkError:
        if self.deadline.expired():
            return WaymarkError("the event stream's timeout passed", code=grpc.StatusCode.DEADLINE_EXCEEDED)
        window = self.backoff.give_up_after
        return Unavailable(
            f"no connection to {address} and no event for {window} s; the event stream gave up"
            + (f" (last error: {self.error.message})" if self.error else ""),
            code=grpc.StatusCode.UNAVAILABLE,
        )

    def connected(self) -> None:
        self.quiet_since = self.began = time.monotonic()

    def stream_timeout(self) -> float | None:
        return self.deadline.remaining()

    def fresh(self, event: run_pb2.RunEvent) -> bool:
        """Whether to yield ``event``: not one delivered before a reconnect."""
        if event.seq <= self.last:
            return False
        self.last = event.seq
        self.quiet_since = time.monotonic()
        self.attempt = 0
        return True

    def next_wait(self, error: WaymarkError) -> float:
        """Seconds to wait before reconnecting after ``error``. A stream that held for longer
        than the backoff's maximum starts its backoff over; one refused at once backs off further."""
        self.error = error
        now = time.monotonic()
        # The stream was connected until now (each one starts after a successful connect), so
        # the give-up window starts here.
        self.quiet_since = now
        if now - self.began > self.backoff.maximum:
            self.attempt = 0
        wait = self.backoff.delay(self.attempt)
        self.attempt += 1
        remaining = self.deadline.remaining()
        return wait if remaining is None else min(wait, remaining)
