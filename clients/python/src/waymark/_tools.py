"""The tool side of a worker: the errors a tool raises, the Task it receives, and a tool's
declaration (name, JSON Schemas from its annotations, policy, timeouts) as RegisterWorker sends it."""

from __future__ import annotations

import inspect
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from google.protobuf import duration_pb2

from waymark import _schema
from waymark._json import to_value
from waymark.v1 import worker_service_pb2


POLICIES = {
    "allow": worker_service_pb2.TOOL_POLICY_ALLOW,
    "ask": worker_service_pb2.TOOL_POLICY_ASK,
    "deny": worker_service_pb2.TOOL_POLICY_DENY,
}


class ToolError(Exception):
    """A tool's failure with what the engine should do about it: ``name`` is the error name the
    workflow sees (default: the exception's class name), ``non_retryable`` fails the call at
    once, ``retry_after`` (seconds) is the least wait before the next attempt (a rate limit)."""

    non_retryable: bool = False

    def __init__(self, message: str, *, name: str | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.retry_after = retry_after


class NonRetryableError(ToolError):
    """Retrying cannot help (a declined card, an unknown order): the call fails at once and the
    workflow sees a NonRetryableError. ``raise NonRetryableError("...") from err`` keeps the cause."""

    non_retryable = True


@dataclass
class Task:
    """The remote tool call a tool is serving."""

    id: str
    run_id: str
    tool: str
    namespace: str
    #: The same on every redispatch of the call: pass it to the downstream API.
    idempotency_key: str
    #: 1 for the first dispatch, one more per redispatch.
    attempt: int
    #: When the call times out (UTC); None when the server sent none.
    deadline: datetime | None
    #: Set when the tool should stop: see ``cancel_reason``. Wait on it (``cancelled.wait(1)``)
    #: or check ``cancelled.is_set()`` between steps.
    cancelled: threading.Event = field(default_factory=threading.Event)
    #: Why ``cancelled`` was set: "lost" (dispatched to another worker, or closed: the result
    #: would be refused), "deadline" or "shutdown" (the worker stopped and the grace passed).
    cancel_reason: Literal["lost", "deadline", "shutdown"] | None = None
    #: The W3C ``traceparent`` of this task attempt's span when the server traces
    #: (docs/tracing.md), else None: give it to an OpenTelemetry propagator to parent the tool's
    #: spans, or send it on the calls the tool makes.
    traceparent: str | None = None


@dataclass
class DeclaredTool:
    declaration: worker_service_pb2.ToolDeclaration
    fn: Callable[..., Any]
    input_type: Any
    wants_task: bool
    is_async: bool


def task_failure(err: BaseException) -> worker_service_pb2.TaskFailure:
    failure = worker_service_pb2.TaskFailure(name=type(err).__name__, message=str(err))
    if isinstance(err, ToolError):
        failure.name = err.name or ("Error" if type(err) in (ToolError, NonRetryableError) else type(err).__name__)
        failure.non_retryable = err.non_retryable
        if err.retry_after is not None:
            failure.retry_after.CopyFrom(duration(err.retry_after))
    return failure


def duration(seconds: float | timedelta) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromTimedelta(seconds if isinstance(seconds, timedelta) else timedelta(seconds=seconds))
    return d


def type_hints(f: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(f)
    except (NameError, TypeError):
        return dict(getattr(f, "__annotations__", {}))


def declare(
    f: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    mutating: bool,
    policy: Literal["allow", "ask", "deny"],
    input_schema: dict[str, Any] | None,
    output_schema: dict[str, Any] | None,
    timeout: float | timedelta | None,
    heartbeat_timeout: float | timedelta | None,
    max_attempts: int,
    queue: str,
) -> DeclaredTool:
    """The declaration of tool ``f`` (see :meth:`waymark.Worker.tool`): its name, description and
    JSON Schemas from the function unless given, and how to call it."""
    tool_name = name or f.__name__
    hints = type_hints(f)
    params = [p for p in inspect.signature(f).parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params or len(params) > 2:
        raise TypeError(f"tool {tool_name} must take the input, and optionally the task: f(input) or f(input, task)")
    input_type = hints.get(params[0].name, Any)
    declaration = worker_service_pb2.ToolDeclaration(
        name=tool_name,
        description=description if description is not None else inspect.cleandoc(f.__doc__ or ""),
        input_schema=to_value(input_schema if input_schema is not None else _schema.schema_of(input_type)),
        output_schema=to_value(output_schema if output_schema is not None else _schema.schema_of(hints.get("return", Any))),
        mutating=mutating,
        policy=POLICIES[policy],
        max_attempts=max_attempts,
        queue=queue,
    )
    if timeout is not None:
        declaration.timeout.CopyFrom(duration(timeout))
    if heartbeat_timeout is not None:
        declaration.heartbeat_timeout.CopyFrom(duration(heartbeat_timeout))
    return DeclaredTool(declaration, f, input_type, len(params) == 2, inspect.iscoroutinefunction(f))
