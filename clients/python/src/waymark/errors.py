"""Typed errors built from the google.rpc details of a failed call.

The server puts a google.rpc.Status in the ``grpc-status-details-bin`` trailer: an ErrorInfo
whose ``reason`` names what went wrong (``RUN_NOT_FOUND``, ``FLOW_DRIFT``, ...), a BadRequest
with field violations for INVALID_ARGUMENT, a RetryInfo when the caller should back off. Every
call of the client raises the subclass of :class:`WaymarkError` its reason names, chained to
the original :class:`grpc.RpcError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2

__all__ = [
    "AlreadyResolved",
    "ApprovalNotFound",
    "FieldViolation",
    "FlowDrift",
    "FlowNameTaken",
    "FlowNotFound",
    "McpServerNotFound",
    "ScheduleExists",
    "ScheduleNotFound",
    "IdempotencyConflict",
    "InvalidArgument",
    "InvalidFlow",
    "LeaseLost",
    "PayloadTooLarge",
    "RunCancelled",
    "RunFailed",
    "RunNotFound",
    "Unavailable",
    "WaymarkError",
    "WorkflowNotFound",
    "WrongState",
    "error_from_rpc",
    "error_from_status",
]

_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class FieldViolation:
    """One invalid field of a request (google.rpc.BadRequest)."""

    field: str
    description: str


class WaymarkError(Exception):
    """A failed call: the gRPC code and message plus the structured details the server sent."""

    reason_name: ClassVar[str | None] = None

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        reason: str = "",
        domain: str = "",
        metadata: Mapping[str, str] | None = None,
        field_violations: Sequence[FieldViolation] = (),
        retry_delay: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.domain = domain
        self.metadata: dict[str, str] = dict(metadata or {})
        self.field_violations: list[FieldViolation] = list(field_violations)
        self.retry_delay = retry_delay

    @property
    def retryable(self) -> bool:
        """True when the same call may succeed later (unavailable, or the server asked to back off)."""
        return self.code == grpc.StatusCode.UNAVAILABLE or self.retry_delay is not None

    def _meta(self, *keys: str) -> str:
        for key in keys:
            if key in self.metadata:
                return self.metadata[key]
        return ""

    def __str__(self) -> str:
        where = f"{self.code.name}/{self.reason}" if self.reason else self.code.name
        return f"{self.message} ({where})"


class RunNotFound(WaymarkError):
    """The run id is unknown in this namespace (NOT_FOUND)."""

    reason_name = "RUN_NOT_FOUND"

    @property
    def run_id(self) -> str:
        return self._meta("run_id")


class WorkflowNotFound(WaymarkError):
    """No workflow of that name is registered on the server (NOT_FOUND)."""

    reason_name = "WORKFLOW_NOT_FOUND"

    @property
    def workflow(self) -> str:
        return self._meta("workflow")


class ApprovalNotFound(WaymarkError):
    """The approval id is unknown (NOT_FOUND)."""

    reason_name = "APPROVAL_NOT_FOUND"

    @property
    def approval_id(self) -> str:
        return self._meta("approval_id")


class FlowDrift(WaymarkError):
    """The run pinned another definition of its workflow and the drift policy is strict
    (FAILED_PRECONDITION). ``choices`` lists the recoveries the server offers."""

    reason_name = "FLOW_DRIFT"

    @property
    def run_id(self) -> str:
        return self._meta("run_id")

    @property
    def choices(self) -> list[str]:
        raw = self._meta("choices")
        return [c.strip() for c in raw.split(",") if c.strip()]

    @property
    def pinned_digest(self) -> str:
        return self._meta("pinned_digest")

    @property
    def current_digest(self) -> str:
        return self._meta("current_digest")


class PayloadTooLarge(WaymarkError):
    """A payload or the request is over a server limit (RESOURCE_EXHAUSTED)."""

    reason_name = "PAYLOAD_TOO_LARGE"

    @property
    def field(self) -> str:
        return self._meta("field")

    @property
    def size_bytes(self) -> int | None:
        raw = self._meta("size_bytes")
        return int(raw) if raw.isdigit() else None

    @property
    def limit_bytes(self) -> int | None:
        raw = self._meta("limit_bytes")
        return int(raw) if raw.isdigit() else None


class InvalidArgument(WaymarkError):
    """The request failed validation (INVALID_ARGUMENT); ``field_violations`` says where."""


class InvalidFlow(InvalidArgument):
    """``flows.register`` refused the flow (INVALID_ARGUMENT) and stored nothing;
    ``field_violations`` name each problem by its exact path (``flow.edges[3].condition``)."""

    reason_name = "INVALID_FLOW"

    @property
    def flow(self) -> str:
        return self._meta("flow")


class FlowNotFound(WaymarkError):
    """The namespace has no flow of that name, or not that version (NOT_FOUND)."""

    reason_name = "FLOW_NOT_FOUND"

    @property
    def flow(self) -> str:
        return self._meta("flow")

    @property
    def version(self) -> str:
        return self._meta("version")


class McpServerNotFound(WaymarkError):
    """The namespace has no MCP server of that name (NOT_FOUND)."""

    reason_name = "MCP_SERVER_NOT_FOUND"

    @property
    def server(self) -> str:
        return self._meta("server")


class ScheduleNotFound(WaymarkError):
    """The namespace has no schedule of that id (NOT_FOUND)."""

    reason_name = "SCHEDULE_NOT_FOUND"

    @property
    def schedule_id(self) -> str:
        return self._meta("schedule_id")


class ScheduleExists(WaymarkError):
    """A schedule of that id exists in the namespace already (ALREADY_EXISTS, on create)."""

    reason_name = "SCHEDULE_EXISTS"

    @property
    def schedule_id(self) -> str:
        return self._meta("schedule_id")


class FlowNameTaken(WaymarkError):
    """A code workflow registered on the server has the flow's name (ALREADY_EXISTS): flows and
    code workflows share one namespace of names."""

    reason_name = "FLOW_NAME_TAKEN"

    @property
    def flow(self) -> str:
        return self._meta("flow")


class AlreadyResolved(WaymarkError):
    """The approval or signal wait was already resolved by another decision, signal, timeout or
    cancellation. The server answers such a call successfully with ``applied`` false and reason
    "already_resolved"; ``approve``, ``deny`` and ``send_signal`` raise this for it (a repeated
    request id or signal id is not an error). ``response`` is the server's answer."""

    reason_name = "ALREADY_RESOLVED"
    response: Any = None


class LeaseLost(WaymarkError):
    """Another worker took over the run (ABORTED). Stop; do not retry."""

    reason_name = "LEASE_LOST"

    @property
    def run_id(self) -> str:
        return self._meta("run_id")


class WrongState(WaymarkError):
    """The run's status does not allow the operation (FAILED_PRECONDITION)."""

    reason_name = "WRONG_STATE"

    @property
    def status(self) -> str:
        return self._meta("status")


class IdempotencyConflict(WaymarkError):
    """The idempotency key already started a run of another workflow (ALREADY_EXISTS)."""

    reason_name = "IDEMPOTENCY_KEY_REUSED"

    @property
    def existing_run_id(self) -> str:
        return self._meta("existing_run_id")


class Unavailable(WaymarkError):
    """The server could not be reached, the connection dropped, or the server is shutting down
    (UNAVAILABLE), after the client's own retries ran out (docs/clients.md), or an event stream
    gave up reconnecting. Retry later, or against another replica. ``not_sent`` is True when the
    request certainly did not reach the server (no connection came up to send it on)."""

    not_sent: bool = False


class RunFailed(Exception):
    """:meth:`waymark.Client.result` waited for a run that ended FAILED or CANCELLED.

    The call succeeded; the run did not. ``status`` is the run's (a :class:`waymark.RunStatus`),
    ``name``, ``message``, ``reason`` and ``details`` its error as the server recorded it.
    """

    def __init__(
        self, run_id: str, status: Any, *, name: str = "", message: str = "", reason: str = "", details: Any = None
    ) -> None:
        what = "was cancelled" if getattr(status, "name", "") == "CANCELLED" else "failed"
        super().__init__(f"run {run_id} {what}" + (f": {name}: {message}" if message else ""))
        self.run_id = run_id
        self.status = status
        self.name = name
        self.message = message
        self.reason = reason
        self.details = details

    @property
    def cancelled(self) -> bool:
        return getattr(self.status, "name", "") == "CANCELLED"


class RunCancelled(RunFailed):
    """:meth:`waymark.Client.result` waited for a run that ended CANCELLED (a kind of RunFailed)."""


_BY_REASON: dict[str, type[WaymarkError]] = {
    cls.reason_name: cls
    for cls in (
        RunNotFound,
        WorkflowNotFound,
        ApprovalNotFound,
        FlowDrift,
        PayloadTooLarge,
        AlreadyResolved,
        LeaseLost,
        WrongState,
        IdempotencyConflict,
        InvalidFlow,
        FlowNotFound,
        FlowNameTaken,
        McpServerNotFound,
        ScheduleNotFound,
        ScheduleExists,
    )
    if cls.reason_name
}

_CODES: dict[int, grpc.StatusCode] = {code.value[0]: code for code in grpc.StatusCode}


def error_from_status(status: status_pb2.Status) -> WaymarkError:
    """The typed error for a google.rpc.Status (as decoded from ``grpc-status-details-bin``)."""
    code = _CODES.get(status.code, grpc.StatusCode.UNKNOWN)
    fields: dict[str, Any] = {"code": code}
    violations: list[FieldViolation] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            fields.update(reason=info.reason, domain=info.domain, metadata=dict(info.metadata))
        elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violations.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
        elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            detail.Unpack(retry)
            fields["retry_delay"] = retry.retry_delay.ToTimedelta().total_seconds()
    cls = _BY_REASON.get(fields.get("reason", ""))
    if cls is None:
        if status.code == code_pb2.INVALID_ARGUMENT:
            cls = InvalidArgument
        elif status.code == code_pb2.UNAVAILABLE:
            cls = Unavailable
        else:
            cls = WaymarkError
    return cls(status.message, field_violations=violations, **fields)


def error_from_rpc(error: grpc.RpcError) -> WaymarkError:
    """The typed error for a failed call of the sync or asyncio gRPC API."""
    # A failed call is both a grpc.RpcError and a grpc.Call (sync) or an AioRpcError (asyncio);
    # both have code(), details() and trailing_metadata().
    call: Any = error
    code: grpc.StatusCode = call.code() if hasattr(call, "code") else grpc.StatusCode.UNKNOWN
    details: str = (call.details() if hasattr(call, "details") else None) or str(error)
    trailers: Any = call.trailing_metadata() if hasattr(call, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == _DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            if status.code == code.value[0]:
                return error_from_status(status)
    return error_from_status(status_pb2.Status(code=code.value[0], message=details))
