"""Waymark client: start, follow, resume and approve durable AI-agent runs over gRPC.

``waymark.Client`` is the blocking client, ``waymark.AsyncClient`` the asyncio one, ``waymark.Worker`` serves remote tools (sync and
``async def`` functions) that runs call; both raise
the typed errors of :mod:`waymark.errors` and retry as docs/clients.md says. ``waymark.RunStatus``
and the other enums of :mod:`waymark.enums` name the API's enum values. The generated protobuf and gRPC modules are
``waymark.v1.*`` (``run_pb2``, ``run_service_pb2_grpc``, ...). ``client.flows`` registers and
reads declarative flows (``waymark.parse_flow`` reads one from a dict, JSON or YAML).
``client.fork``, ``client.preview_fork`` and ``client.compare_runs`` fork and compare runs
(docs/forks.md); ``client.tokens`` yields the text of a run's model calls as they write it.
``client.schedules`` starts runs on a calendar (docs/schedules.md).
"""

# The generated code is the package waymark.v1, written by buf into a separate, generated-only
# folder (clients/python/gen). Extending __path__ lets both folders make up this one package
# when they sit side by side on sys.path (an editable install); a wheel merges them.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from waymark._environment import DEFAULT_ADDRESS  # noqa: E402
from waymark._retry import Backoff, RetryPolicy  # noqa: E402
from waymark._follow import Reconnect  # noqa: E402
from waymark._tokens import AttemptStarted, CallFinished, Token, TokenText  # noqa: E402
from waymark._flows import FlowSource, parse_flow  # noqa: E402
from waymark._json import from_value, to_value  # noqa: E402
from waymark.aio import AsyncClient  # noqa: E402
from waymark.client import Client  # noqa: E402
from waymark.tls import tls_credentials  # noqa: E402
from waymark.worker import NonRetryableError, Task, ToolError, Worker  # noqa: E402
from waymark.enums import (  # noqa: E402
    ApprovalState,
    DriftRecovery,
    EntryStatus,
    RunStatus,
    ScheduleActionCause,
    ScheduleOverlapPolicy,
    WaitFor,
)
from waymark.errors import (  # noqa: E402
    AlreadyResolved,
    ApprovalNotFound,
    FieldViolation,
    FlowDrift,
    FlowNameTaken,
    FlowNotFound,
    McpServerNotFound,
    IdempotencyConflict,
    InvalidArgument,
    InvalidFlow,
    LeaseLost,
    PayloadTooLarge,
    RunCancelled,
    RunFailed,
    RunNotFound,
    ScheduleExists,
    ScheduleNotFound,
    Unavailable,
    WaymarkError,
    WorkflowNotFound,
    WrongState,
)

__all__ = [
    "DEFAULT_ADDRESS",
    "AlreadyResolved",
    "ApprovalNotFound",
    "ApprovalState",
    "AttemptStarted",
    "AsyncClient",
    "Backoff",
    "CallFinished",
    "Client",
    "DriftRecovery",
    "WaitFor",
    "EntryStatus",
    "FieldViolation",
    "FlowDrift",
    "FlowNameTaken",
    "FlowNotFound",
    "McpServerNotFound",
    "FlowSource",
    "IdempotencyConflict",
    "InvalidArgument",
    "InvalidFlow",
    "LeaseLost",
    "NonRetryableError",
    "PayloadTooLarge",
    "Reconnect",
    "RetryPolicy",
    "RunCancelled",
    "RunFailed",
    "RunNotFound",
    "RunStatus",
    "ScheduleActionCause",
    "ScheduleExists",
    "ScheduleNotFound",
    "ScheduleOverlapPolicy",
    "Task",
    "Token",
    "TokenText",
    "ToolError",
    "Unavailable",
    "WaymarkError",
    "Worker",
    "WorkflowNotFound",
    "WrongState",
    "from_value",
    "parse_flow",
    "tls_credentials",
    "to_value",
]
