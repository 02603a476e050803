"""The request messages the clients send, built from their methods' arguments (the same for the
sync and asyncio clients)."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

import grpc

from waymark._json import to_value
from waymark.v1 import run_pb2, run_service_pb2, signal_service_pb2


def readiness_request() -> bytes:
    """grpc.health.v1.HealthCheckRequest for the whole server (service ""): no fields set."""
    return b""


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
    wait_for: int = 0,
) -> run_service_pb2.StartRunRequest:
    request = run_service_pb2.StartRunRequest(
        namespace=namespace,
        workflow=workflow,
        # Without a key of the caller's, one for this call, so the client's retries start one run.
        idempotency_key=idempotency_key or f"client:{uuid.uuid4()}",
        # With wait_for, wait too: a server older than wait_for then waits for the first park at least.
        wait=wait or wait_for != 0,
        wait_for=run_service_pb2.WaitFor.ValueType(wait_for),
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


def purge_runs(
    namespace: str, *, older_than: timedelta, statuses: Iterable[int], workflow: str, dry_run: bool, limit: int
) -> run_service_pb2.PurgeRunsRequest:
    request = run_service_pb2.PurgeRunsRequest(
        namespace=namespace,
        statuses=[run_pb2.RunStatus.ValueType(int(s)) for s in statuses],
        workflow=workflow,
        dry_run=dry_run,
        limit=limit,
    )
    request.older_than.FromTimedelta(older_than)
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


def get_journal(
    namespace: str, run_id: str, after_seq: int | None, page_size: int, include_large_payloads: bool = False
) -> run_service_pb2.GetJournalRequest:
    request = run_service_pb2.GetJournalRequest(
        namespace=namespace, run_id=run_id, page_size=page_size, include_large_payloads=include_large_payloads
    )
    if after_seq is not None:
        request.after_seq = after_seq
    return request


def stream_events(
    namespace: str, run_id: str, after_seq: int, follow_suspended: bool, *, after_offset: int | None = None, large_payloads: bool = False
) -> run_service_pb2.StreamRunEventsRequest:
    """``after_offset`` not None: with model call deltas, after that offset (-1: from the first)."""
    request = run_service_pb2.StreamRunEventsRequest(
        namespace=namespace, run_id=run_id, follow_suspended=follow_suspended, include_large_payloads=large_payloads
    )
    if after_seq >= 0:
        request.after_seq = after_seq
    if after_offset is not None:
        request.include_deltas = True
        if after_offset >= 0:
            request.after_delta_offset = after_offset
    return request


def fork_run(
    namespace: str,
    run_id: str,
    at_seq: int,
    *,
    input: Any,
    model: str,
    workflow_version: str,
    decision: str | bool | None,
    decision_comment: str,
    decided_by: str,
    budget_usd: float | None,
    labels: Mapping[str, str] | None,
) -> run_service_pb2.ForkRunRequest:
    request = run_service_pb2.ForkRunRequest(
        namespace=namespace, run_id=run_id, at_seq=at_seq, model=model, workflow_version=workflow_version, labels=dict(labels or {})
    )
    value = to_value(input)
    if value is not None:
        request.input.CopyFrom(value)
    if decision is not None:
        if decision not in ("approve", "deny", True, False):
            raise ValueError(f"decision must be 'approve', 'deny', True or False, not {decision!r}")
        approve = decision is True or decision == "approve"
        request.decision.CopyFrom(run_service_pb2.ForkDecision(approve=approve, comment=decision_comment, by=decided_by))
    if budget_usd is not None:
        request.budget_usd = budget_usd
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
