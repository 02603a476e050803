"""ForkRun and CompareRuns (docs/forks.md) as operations (``_steps.py``) that :class:`waymark.Client`
and :class:`waymark.AsyncClient` run in their own I/O style. Their docstrings are the methods'."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal, Union

from waymark import _requests
from waymark._steps import Core, Op
from waymark._unary import call
from waymark.v1 import run_service_pb2

Decision = Union[Literal["approve", "deny"], bool]
"""A decision for the approval at a fork point: ``"approve"`` / ``True`` or ``"deny"`` / ``False``."""


def fork(
    core: Core,
    run_id: str,
    at_seq: int,
    *,
    input: Any = None,
    model: str = "",
    workflow_version: str = "",
    decision: Decision | None = None,
    decision_comment: str = "",
    decided_by: str = "",
    idempotency_key: str | None = None,
    budget_usd: float | None = None,
    labels: Mapping[str, str] | None = None,
    wait: bool = False,
    timeout: float | None = None,
) -> Op[run_service_pb2.ForkRunResponse]:
    """Forks a run at the entry ``at_seq`` (docs/forks.md): a new run of the same workflow that
    keeps every result the source recorded before that entry and executes from there. The source
    is only read. An entry in the middle of an effect names the whole effect: the response's
    ``fork_seq`` is the fork point after that move.

    ``input`` (JSON; None: the source's), ``model`` (every live model call of the fork's agents),
    ``workflow_version`` (the version this server runs) change what the fork runs; ``decision``
    (``"approve"``/``"deny"`` or a bool, with ``decision_comment`` and ``decided_by``, default
    ``fork``) decides the approval at the fork point, which must then be one. ``budget_usd``
    replaces the source's budget; ``labels`` are added to the source's. With ``wait`` the server
    executes the fork and answers once it ends or parks (give a ``timeout`` long enough).

    An ``idempotency_key`` already used returns the first fork, with ``created`` false; without one
    the client makes one up for this call, so its own retries never fork twice (a retry that finds
    the fork reports ``created``). An invalid fork point, decision, model or version raises
    :class:`waymark.InvalidArgument` (reason ``INVALID_FORK``).
    """
    request = _requests.fork_run(
        core.namespace, run_id, at_seq, input=input, model=model, workflow_version=workflow_version, decision=decision,
        decision_comment=decision_comment, decided_by=decided_by, budget_usd=budget_usd, labels=labels,
    )
    request.idempotency_key = idempotency_key or f"client:{uuid.uuid4()}"
    request.wait = wait
    response: run_service_pb2.ForkRunResponse = yield from call(core, "ForkRun", core.runs.ForkRun, request, timeout)
    if idempotency_key is None:
        # Nobody else holds the key: created = false can only be this call's own retry.
        response.created = True
    return response


def preview_fork(
    core: Core,
    run_id: str,
    at_seq: int,
    *,
    input: Any = None,
    model: str = "",
    workflow_version: str = "",
    decision: Decision | None = None,
    decision_comment: str = "",
    decided_by: str = "",
    budget_usd: float | None = None,
    labels: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Op[run_service_pb2.ForkPreview]:
    """What :meth:`fork` with these options would keep, redo and cost (ForkRun with ``dry_run``),
    computed with no live calls and nothing written."""
    request = _requests.fork_run(
        core.namespace, run_id, at_seq, input=input, model=model, workflow_version=workflow_version, decision=decision,
        decision_comment=decision_comment, decided_by=decided_by, budget_usd=budget_usd, labels=labels,
    )
    request.dry_run = True
    response: run_service_pb2.ForkRunResponse = yield from call(core, "ForkRun", core.runs.ForkRun, request, timeout)
    return response.preview


def compare_runs(core: Core, run_id_a: str, run_id_b: str, *, timeout: float | None = None) -> Op[run_service_pb2.CompareRunsResponse]:
    """Two runs of one workflow compared effect by effect (docs/forks.md "Comparing runs"): for
    each effect what each run recorded (output, model, tokens, cost, duration) and whether it
    differs, and each run's totals; ``fork_seq`` when one is a fork of the other. Runs of
    different workflows raise :class:`waymark.InvalidArgument` (reason ``RUNS_NOT_COMPARABLE``)."""
    request = run_service_pb2.CompareRunsRequest(namespace=core.namespace, run_id_a=run_id_a, run_id_b=run_id_b)
    response: run_service_pb2.CompareRunsResponse = yield from call(core, "CompareRuns", core.runs.CompareRuns, request, timeout)
    return response
