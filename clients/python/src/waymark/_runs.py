"""The calls of RunService as operations (``_steps.py``) that :class:`waymark.Client` and
:class:`waymark.AsyncClient` run in their own I/O style: what each sends (``_requests``), how it
is retried (``_unary``), what it returns (``_responses``). Their docstrings are the methods'."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

from waymark import _follow, _requests, _responses
from waymark._steps import END, Core, Driver, Item, Items, Op, next_item
from waymark._unary import call
from waymark.enums import DriftRecovery, RunStatus
from waymark.v1 import run_pb2, run_service_pb2

_T = TypeVar("_T")


def pages(
    core: Core, name: str, method: Callable[..., Any], request: Any, items: Callable[[Any], Iterable[_T]], timeout: float | None
) -> Items[_T]:
    """The ``items`` of each page of a listing, fetching the next page as the caller advances
    (``timeout`` bounds each page)."""
    while True:
        page = yield from call(core, name, method, request, timeout)
        for item in items(page):
            yield Item(item)
        if not page.next_page_token:
            return
        request.page_token = page.next_page_token


def start_run(
    core: Core,
    workflow: str,
    input: Any = None,
    *,
    idempotency_key: str | None = None,
    wait: bool = False,
    labels: Mapping[str, str] | None = None,
    budget_usd: float | None = None,
    dry_run: bool = False,
    run_timeout: float | timedelta | None = None,
    timeout: float | None = None,
    wait_for: int = 0,
) -> Op[run_service_pb2.StartRunResponse]:
    """Starts a run of ``workflow`` with a JSON ``input``.

    With ``wait`` the server executes it right away and answers once it ends or parks for the
    first time, on anything (give a ``timeout`` long enough). ``wait_for`` (a
    :class:`waymark.WaitFor`) waits until the run gets there instead: ``END``, ``OUTSIDE_INPUT``
    (ended, or waiting on an approval or a signal; timers, retry backoffs, remote tool calls and
    child runs are waited through) or ``FIRST_PARK`` (as ``wait``); with a ``timeout`` the answer
    comes a little before it, with the run as it stands and ``wait_complete`` false if it has not
    got there (the run goes on); without one the client asks again with the same key each time
    the server answers at an attempt's deadline. An ``idempotency_key`` already used returns the first run,
    with ``created`` false; without one the client makes one up for this call, so its own
    retries never start a second run. ``run_timeout`` (seconds or a ``timedelta``) is the
    run's own timeout: not finished that long after it started, it fails with reason
    ``run_timed_out``; it replaces the workflow definition's. ``timeout`` bounds this call only.
    """
    request = _requests.start_run(
        core.namespace,
        workflow,
        input,
        idempotency_key=idempotency_key,
        wait=wait,
        labels=labels,
        budget_usd=budget_usd,
        dry_run=dry_run,
        run_timeout=run_timeout,
        wait_for=int(wait_for),
    )
    asked = time.monotonic()
    response = yield from call(core, "StartRun", core.runs.StartRun, request, timeout)
    created = _responses.started(response, request, generated=idempotency_key is None).created
    # Without a timeout each attempt has the client's, and an answer at it (wait_complete false
    # after most of it) is asked again. One that came early did not wait (a server that knows no
    # wait_for): no busy loop on it.
    while wait_for and timeout is None and core.timeout and not response.wait_complete and time.monotonic() - asked >= core.timeout / 2:
        asked = time.monotonic()
        response = yield from call(core, "StartRun", core.runs.StartRun, request, timeout)
    response.created = created
    return response


def get_run(core: Core, run_id: str, *, timeout: float | None = None) -> Op[run_service_pb2.GetRunResponse]:
    """A run and, when it is suspended, what it waits for (``waiting_on``)."""
    request = run_service_pb2.GetRunRequest(namespace=core.namespace, run_id=run_id)
    response: run_service_pb2.GetRunResponse = yield from call(core, "GetRun", core.runs.GetRun, request, timeout)
    return response


def purge_runs(
    core: Core,
    *,
    older_than: timedelta,
    statuses: Iterable[int] = (),
    workflow: str = "",
    dry_run: bool = False,
    limit: int = 0,
    timeout: float | None = None,
) -> Op[run_service_pb2.PurgeRunsResponse]:
    """Deletes finished runs of the namespace that ended at least ``older_than`` ago, with their
    children and journals, in batches (docs/operations.md "Purging runs"); ``statuses`` (finished
    :class:`waymark.RunStatus` values) and ``workflow`` narrow it, ``dry_run`` only counts, ``limit``
    caps the root runs of this call (0: the server's 1000). The response's ``more`` says the call
    stopped at its limit. Needs an admin key; retried (a repeat deletes what still matches)."""
    request = _requests.purge_runs(
        core.namespace, older_than=older_than, statuses=statuses, workflow=workflow, dry_run=dry_run, limit=limit
    )
    response: run_service_pb2.PurgeRunsResponse = yield from call(core, "PurgeRuns", core.runs.PurgeRuns, request, timeout)
    return response


def list_runs(
    core: Core,
    *,
    statuses: Iterable[int] = (),
    workflow: str = "",
    labels: Mapping[str, str] | None = None,
    parent_run_id: str = "",
    page_size: int = 0,
    timeout: float | None = None,
) -> Items[run_pb2.Run]:
    """Iterates over matching runs, newest first, fetching pages as the loop advances
    (``statuses``: :class:`waymark.RunStatus` values; ``timeout`` bounds each page)."""
    request = _requests.list_runs(
        core.namespace,
        statuses=statuses,
        workflow=workflow,
        labels=labels,
        parent_run_id=parent_run_id,
        page_size=page_size,
    )
    return (yield from pages(core, "ListRuns", core.runs.ListRuns, request, lambda page: page.runs, timeout))


def journal(
    core: Core,
    run_id: str,
    *,
    after_seq: int | None = None,
    page_size: int = 0,
    include_large_payloads: bool = False,
    timeout: float | None = None,
) -> Items[run_pb2.JournalEntry]:
    """Iterates over a run's journal in seq order (after ``after_seq`` when given). A payload
    stored out of line (a result over the server's inline threshold, 64 KiB by default) comes as
    ``payload_ref`` unless ``include_large_payloads`` (docs/journal.md "Large payloads")."""
    request = _requests.get_journal(core.namespace, run_id, after_seq, page_size, include_large_payloads)
    return (yield from pages(core, "GetJournal", core.runs.GetJournal, request, lambda page: page.entries, timeout))


def result(core: Core, run_id: str, *, timeout: float | None = None) -> Op[Any]:
    """Waits for the run to end, following its events (through reconnects, and while it is
    parked), and returns its output as plain JSON. Raises :class:`waymark.RunFailed` when it
    failed or was cancelled; ``timeout`` bounds the wait."""
    deadline = _follow.Deadline(timeout)
    run = (yield from get_run(core, run_id, timeout=deadline.remaining())).run
    if RunStatus(run.status).terminal:
        return _responses.run_outcome(run_id, run.status, run.output, run.error)
    events = Driver(
        _follow.events(core, run_id, after_seq=run.next_seq - 1, follow_suspended=True, timeout=deadline.remaining())
    )
    try:
        while (event := (yield from next_item(events))) is not END:
            change = event.status_changed
            if event.WhichOneof("body") == "status_changed" and RunStatus(change.status).terminal:
                return _responses.run_outcome(run_id, change.status, change.output, change.error)
    finally:
        events.op.close()  # ends the stream at once when the outcome came before its end
    run = (yield from get_run(core, run_id, timeout=deadline.remaining())).run
    return _responses.run_outcome_or_still(run_id, run)


def resume(
    core: Core,
    run_id: str,
    invalidate: Iterable[int] = (),
    *,
    drift_recovery: int = DriftRecovery.UNSPECIFIED,
    timeout: float | None = None,
) -> Op[run_service_pb2.ResumeRunResponse]:
    """Makes a suspended or failed run execute again; ``invalidate`` unpins entries by seq.

    ``drift_recovery`` (:class:`waymark.DriftRecovery` ``RESTART`` or ``ABANDON``) recovers a
    run that raised :class:`waymark.FlowDrift`; with RESTART the response's ``restarted_as``
    is the new run. Not retried once sent (a repeat would execute the run again).
    """
    request = _requests.resume_run(
        core.namespace, run_id, dry_run=False, invalidate=invalidate, drift_recovery=drift_recovery
    )
    response: run_service_pb2.ResumeRunResponse = yield from call(core, "ResumeRun", core.runs.ResumeRun, request, timeout)
    return response


def preview_resume(
    core: Core, run_id: str, invalidate: Iterable[int] = (), *, timeout: float | None = None
) -> Op[run_pb2.ResumePreview]:
    """What :meth:`resume` would do, computed with no live calls and nothing written."""
    request = _requests.resume_run(
        core.namespace, run_id, dry_run=True, invalidate=invalidate, drift_recovery=DriftRecovery.UNSPECIFIED
    )
    response: run_service_pb2.ResumeRunResponse = yield from call(core, "ResumeRun", core.runs.ResumeRun, request, timeout)
    return response.preview


def cancel(core: Core, run_id: str, reason: str = "", *, timeout: float | None = None) -> Op[run_pb2.Run]:
    """Cancels a run; cancelling a finished run returns it unchanged."""
    request = run_service_pb2.CancelRunRequest(namespace=core.namespace, run_id=run_id, reason=reason)
    response: run_service_pb2.CancelRunResponse = yield from call(core, "CancelRun", core.runs.CancelRun, request, timeout)
    return response.run


def list_workflows(core: Core, *, timeout: float | None = None) -> Op[list[run_pb2.Workflow]]:
    request = run_service_pb2.ListWorkflowsRequest(namespace=core.namespace)
    response = yield from call(core, "ListWorkflows", core.runs.ListWorkflows, request, timeout)
    return list(response.workflows)


def provenance(core: Core, run_id: str, *, timeout: float | None = None) -> Op[run_service_pb2.RunProvenance]:
    """What the run's agents answered and the model calls and tool results each answer drew
    on, and the same for each child run."""
    request = run_service_pb2.GetRunProvenanceRequest(namespace=core.namespace, run_id=run_id)
    response: run_service_pb2.GetRunProvenanceResponse = yield from call(
        core, "GetRunProvenance", core.runs.GetRunProvenance, request, timeout
    )
    return response.provenance
