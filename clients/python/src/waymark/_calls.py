"""What the sync and asyncio clients share: options, request building, backoff."""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from waymark._json import to_value
from waymark.errors import AlreadyResolved
from waymark.v1 import run_pb2, run_service_pb2, signal_service_pb2

_R = TypeVar("_R", signal_service_pb2.SendSignalResponse, signal_service_pb2.DecideApprovalResponse)

DEFAULT_ADDRESS = "127.0.0.1:50051"

# Keep follow-streams alive through proxies; 30 s is the smallest client ping interval most
# servers and proxies accept.
# Calls that are safe to repeat are retried when the server is unavailable (a restart, a
# rollout): reads, cancels, and signals and decisions, which always carry an id that makes a
# repeat a no-op. StartRun and ResumeRun are not retried. round_robin spreads calls over every
# address a "dns:///" target resolves to (a headless Kubernetes Service).
SERVICE_CONFIG = {
    "loadBalancingConfig": [{"round_robin": {}}],
    "methodConfig": [
        {
            "name": [
                {"service": "waymark.v1.RunService", "method": method}
                for method in ("GetRun", "ListRuns", "GetJournal", "ListWorkflows", "CancelRun")
            ]
            + [{"service": "waymark.v1.SignalService"}],
            "retryPolicy": {
                "maxAttempts": 5,
                "initialBackoff": "0.2s",
                "maxBackoff": "3s",
                "backoffMultiplier": 2,
                "retryableStatusCodes": ["UNAVAILABLE"],
            },
        }
    ],
}

CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.service_config", json.dumps(SERVICE_CONFIG)),
    ("grpc.enable_retries", 1),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.max_receive_message_length", 16 << 20),
]


@dataclass(frozen=True)
class Backoff:
    """Paces the reconnects of an event stream: the first wait is ``initial`` seconds, each
    further one doubles up to ``maximum`` (with jitter), and the stream gives up after failing to
    reconnect for ``give_up_after`` seconds in a row. An event received starts over."""

    initial: float = 0.1
    maximum: float = 5.0
    give_up_after: float = 120.0

    def delay(self, attempt: int) -> float:
        base: float = min(self.initial * 2.0**attempt, self.maximum)
        return base / 2 + random.uniform(0, base / 2)


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
        idempotency_key=idempotency_key or "",
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
    statuses: Iterable[run_pb2.RunStatus.ValueType],
    workflow: str,
    labels: Mapping[str, str] | None,
    parent_run_id: str,
    page_size: int,
) -> run_service_pb2.ListRunsRequest:
    return run_service_pb2.ListRunsRequest(
        namespace=namespace,
        statuses=list(statuses),
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
    states: Iterable[run_pb2.ApprovalState.ValueType],
    page_size: int,
) -> signal_service_pb2.ListApprovalsRequest:
    return signal_service_pb2.ListApprovalsRequest(
        namespace=namespace,
        run_id=run_id,
        workflow=workflow,
        labels=dict(labels or {}),
        states=list(states),
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
    drift_recovery: run_service_pb2.DriftRecovery.ValueType,
) -> run_service_pb2.ResumeRunRequest:
    return run_service_pb2.ResumeRunRequest(
        namespace=namespace, run_id=run_id, dry_run=dry_run, invalidate=list(invalidate), drift_recovery=drift_recovery
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
