"""Reading the answers: a start's run, a signal's or decision's outcome, a run's result or
failure, the readiness check."""

from __future__ import annotations

from typing import Any, TypeVar

import grpc

from waymark._json import from_value
from waymark.enums import RunStatus
from waymark.errors import AlreadyResolved, RunCancelled, RunFailed, Unavailable, WaymarkError
from waymark.v1 import run_pb2, run_service_pb2, signal_service_pb2


_R = TypeVar("_R", signal_service_pb2.SendSignalResponse, signal_service_pb2.DecideApprovalResponse)


def serving(response: bytes) -> bool:
    """Whether a grpc.health.v1.HealthCheckResponse says SERVING (field 1, varint 1). Decoded by
    hand, so the client needs no grpcio-health-checking."""
    return response == b"\x08\x01"


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
