"""Signals and approvals, the calls of SignalService, as operations (``_steps.py``) that both
clients run: what each sends is _requests, how its answer is read _responses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from waymark import _requests, _responses
from waymark._runs import journal, pages
from waymark._steps import END, Core, Driver, Items, Op, next_item
from waymark._unary import call
from waymark.v1 import run_pb2, signal_service_pb2


def send_signal(
    core: Core,
    run_id: str,
    name: str,
    payload: Any = None,
    *,
    signal_id: str | None = None,
    timeout: float | None = None,
) -> Op[signal_service_pb2.SendSignalResponse]:
    """Delivers a named signal. ``signal_id`` makes it idempotent (default: a random one); a
    repeat is answered like the first (``reason`` "duplicate"). A run not waiting for the
    signal yet keeps it for its next wait of that name (``buffered``). Raises
    :class:`waymark.AlreadyResolved` when another resolution already closed the wait."""
    request = _requests.send_signal(core.namespace, run_id, name, payload, signal_id)
    response: signal_service_pb2.SendSignalResponse = yield from call(
        core, "SendSignal", core.signals.SendSignal, request, timeout
    )
    if _responses.signal_duplicate(response):
        # A repeat of the signal id: the first delivery's outcome, as its journal entry says.
        entries = Driver(journal(core, run_id, after_seq=response.seq - 1, page_size=1, timeout=timeout))
        try:
            entry = yield from next_item(entries)
        finally:
            entries.op.close()
        _responses.signal_outcome(response, None if entry is END else entry)
    return _responses.resolved(response, f"the wait for signal {name!r} of run {run_id}")


def list_approvals(
    core: Core,
    *,
    run_id: str = "",
    workflow: str = "",
    labels: Mapping[str, str] | None = None,
    states: Iterable[int] = (),
    page_size: int = 0,
    timeout: float | None = None,
) -> Items[run_pb2.Approval]:
    """Iterates over approvals, pending ones unless ``states`` (:class:`waymark.ApprovalState`
    values) says otherwise, oldest first."""
    request = _requests.list_approvals(
        core.namespace, run_id=run_id, workflow=workflow, labels=labels, states=states, page_size=page_size
    )
    return (yield from pages(core, "ListApprovals", core.signals.ListApprovals, request, lambda page: page.approvals, timeout))


def get_approval(core: Core, approval_id: str, *, timeout: float | None = None) -> Op[run_pb2.Approval]:
    request = signal_service_pb2.GetApprovalRequest(namespace=core.namespace, id=approval_id)
    response: signal_service_pb2.GetApprovalResponse = yield from call(
        core, "GetApproval", core.signals.GetApproval, request, timeout
    )
    return response.approval


def approve(
    core: Core,
    approval_id: str,
    *,
    by: str,
    comment: str = "",
    payload: Any = None,
    request_id: str | None = None,
    timeout: float | None = None,
) -> Op[signal_service_pb2.DecideApprovalResponse]:
    """Approves. A repeated ``request_id`` is answered like the first call (``reason``
    "duplicate"; so is a retry of this call after the server applied it). Raises
    :class:`waymark.AlreadyResolved` (with ``.response``) when another decision, a timeout or
    a cancellation already resolved the approval."""
    request = _requests.decide(
        core.namespace, approval_id, True, by=by, comment=comment, payload=payload, request_id=request_id
    )
    return (yield from _decide(core, request, timeout))


def deny(
    core: Core,
    approval_id: str,
    *,
    by: str,
    comment: str = "",
    payload: Any = None,
    request_id: str | None = None,
    timeout: float | None = None,
) -> Op[signal_service_pb2.DecideApprovalResponse]:
    """Denies; see :meth:`approve`."""
    request = _requests.decide(
        core.namespace, approval_id, False, by=by, comment=comment, payload=payload, request_id=request_id
    )
    return (yield from _decide(core, request, timeout))


def _decide(
    core: Core, request: signal_service_pb2.DecideApprovalRequest, timeout: float | None
) -> Op[signal_service_pb2.DecideApprovalResponse]:
    response = yield from call(core, "DecideApproval", core.signals.DecideApproval, request, timeout)
    return _responses.resolved(_responses.decided(response, request), f"approval {request.id}")
