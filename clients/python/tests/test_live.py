"""Live tests against a real ``waymark server --workflows test/clients/workflows.ts``.

test/clients/clients.test.ts (``npm test``) starts the server and runs pytest with its address in
WAYMARK_ADDRESS and, in WAYMARK_RESTART_URL, an endpoint that restarts the server on the same
address and answers once the new one listens. Without WAYMARK_ADDRESS these tests skip.
"""

from __future__ import annotations

import asyncio
import os
import queue
import secrets
import threading
import urllib.request
import uuid
from typing import Any

import grpc
import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2

ADDRESS = os.environ.get("WAYMARK_ADDRESS", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs these against a real server"
)

# The order tells the harness's stand-in payment provider which test's refund it charged: it
# checks that each of these orders was charged exactly once.
REFUND = {"order": "py-A-1001", "amount": 42.5}
REFUND_ASYNC = {"order": "py-async-A-1001", "amount": 42.5}


def restart_server(query: str) -> None:
    """Asks the harness to restart the server; returns once the new one listens."""
    url = os.environ["WAYMARK_RESTART_URL"]
    request = urllib.request.Request(f"{url}?{query}", method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 200, response.read()


def client() -> waymark.Client:
    # wait_for_ready: after a restart, calls wait for the connection instead of failing while
    # grpc's reconnect backoff runs.
    return waymark.Client(ADDRESS, wait_for_ready=True)


def check_refund_finished(c: waymark.Client, run_id: str, events: list[run_pb2.RunEvent], reconnects: list[int]) -> None:
    """The stream reconnected, repeated and missed nothing, and the refund ran once."""
    assert reconnects, "the stream never reconnected, so the restart was not exercised"
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs)), f"an event was repeated or out of order: {seqs}"
    last = events[-1]
    assert last.WhichOneof("body") == "status_changed"
    assert last.status_changed.status == run_pb2.RUN_STATUS_SUCCEEDED
    output = waymark.from_value(last.status_changed.output)
    assert output["status"] == "refunded" and output["refundId"]

    journal = list(c.journal(run_id))
    assert seqs == [e.seq for e in journal], "the stream must deliver exactly the journal's entries"
    charges = [e for e in journal if e.kind == "tool" and e.name == "charge_back" and e.status == run_pb2.ENTRY_STATUS_OK]
    assert len(charges) == 1, f"charge_back executed {len(charges)} times, want once"
    assert c.get_run(run_id).run.status == run_pb2.RUN_STATUS_SUCCEEDED


def test_refund_survives_a_server_crash() -> None:
    """Sync client: start, follow, park, the server is killed (SIGKILL) and restarted while the
    run is parked, approve, finish; the stream reconnects by itself."""
    with client() as c:
        key = f"py-refund-{secrets.token_hex(6)}"
        started = c.start_run("refund", REFUND, idempotency_key=key)
        run_id = started.run.id
        again = c.start_run("refund", REFUND, idempotency_key=key)
        assert not again.created and again.run.id == run_id

        events: list[run_pb2.RunEvent] = []
        reconnects: list[int] = []
        parked = threading.Event()
        outcome: queue.Queue[BaseException | None] = queue.Queue()

        def follow() -> None:
            try:
                for event in c.events(run_id, follow_suspended=True, on_reconnect=lambda after, _: reconnects.append(after)):
                    events.append(event)
                    if event.status_changed.status == run_pb2.RUN_STATUS_SUSPENDED:
                        parked.set()
                outcome.put(None)
            except BaseException as err:  # handed to the test thread
                outcome.put(err)
                parked.set()

        threading.Thread(target=follow, daemon=True).start()
        assert parked.wait(60), "the run never parked"

        # Parked: get_run says on what, and a resume preview replays the approval from the journal.
        waiting = c.get_run(run_id).waiting_on
        assert [w.kind for w in waiting] == ["approval"]
        preview = c.preview_resume(run_id)
        assert preview.hits >= 1 and preview.items[0].kind == "approval"

        restart_server("signal=SIGKILL")

        approvals = list(c.list_approvals(run_id=run_id))
        assert len(approvals) == 1 and approvals[0].state == run_pb2.APPROVAL_STATE_PENDING
        decided = c.approve(approvals[0].id, by="py-test", comment="within policy")
        assert decided.applied
        with pytest.raises(waymark.AlreadyResolved) as lost:
            c.deny(approvals[0].id, by="someone-else")
        assert lost.value.response.approval.decided_by == "py-test"

        error = outcome.get(timeout=60)
        assert error is None, error
        check_refund_finished(c, run_id, events, reconnects)
        assert any(run.id == run_id for run in c.list_runs(workflow="refund", page_size=1))


@pytest.mark.asyncio
async def test_refund_survives_a_server_restart_async() -> None:
    """asyncio client: the same scenario with a graceful restart (SIGTERM: streams end UNAVAILABLE)."""
    async with waymark.AsyncClient(ADDRESS, wait_for_ready=True) as c:
        started = await c.start_run("refund", REFUND_ASYNC)
        run_id = started.run.id
        events: list[run_pb2.RunEvent] = []
        reconnects: list[int] = []
        parked = asyncio.Event()

        async def follow() -> None:
            async for event in c.events(run_id, follow_suspended=True, on_reconnect=lambda after, _: reconnects.append(after)):
                events.append(event)
                if event.status_changed.status == run_pb2.RUN_STATUS_SUSPENDED:
                    parked.set()

        stream = asyncio.create_task(follow())
        parked_wait = asyncio.create_task(parked.wait())
        done, _ = await asyncio.wait({stream, parked_wait}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        assert parked_wait in done, f"the run never parked ({stream.exception() if stream.done() else 'timeout'})"

        assert [w.kind for w in (await c.get_run(run_id)).waiting_on] == ["approval"]
        assert (await c.preview_resume(run_id)).hits >= 1

        await asyncio.to_thread(restart_server, "signal=SIGTERM")

        approvals = [a async for a in c.list_approvals(run_id=run_id)]
        assert len(approvals) == 1
        assert (await c.approve(approvals[0].id, by="py-async-test")).applied
        await asyncio.wait_for(stream, timeout=60)
    with client() as sync:
        check_refund_finished(sync, run_id, events, reconnects)


def test_typed_errors() -> None:
    """Each typed error, raised by a real server response."""
    missing = str(uuid.uuid4())
    with client() as c:
        with pytest.raises(waymark.RunNotFound) as run_not_found:
            c.get_run(missing)
        assert run_not_found.value.run_id == missing and run_not_found.value.code == grpc.StatusCode.NOT_FOUND

        with pytest.raises(waymark.WorkflowNotFound) as workflow_not_found:
            c.start_run("no_such_workflow", {})
        assert workflow_not_found.value.workflow == "no_such_workflow"

        with pytest.raises(waymark.InvalidArgument) as invalid:
            c.start_run("refund", {"order": 7})
        assert invalid.value.field_violations and invalid.value.field_violations[0].field.startswith("input")

        with pytest.raises(waymark.PayloadTooLarge) as too_large:
            c.start_run("refund", {"order": "x" * ((1 << 20) + 1), "amount": 1})
        assert too_large.value.limit_bytes and too_large.value.size_bytes > too_large.value.limit_bytes

        key = f"py-conflict-{secrets.token_hex(6)}"
        first = c.start_run("drift_probe", {}, idempotency_key=key)
        with pytest.raises(waymark.IdempotencyConflict) as conflict:
            c.start_run("refund", {"order": "A-1", "amount": 1}, idempotency_key=key)
        assert conflict.value.existing_run_id == first.run.id

        with pytest.raises(waymark.ApprovalNotFound) as approval_not_found:
            c.get_approval(f"{missing}:1")
        assert approval_not_found.value.approval_id

        c.cancel(first.run.id, "to make it final")
        with pytest.raises(waymark.WrongState) as wrong_state:
            c.send_signal(first.run.id, "nudge", {})
        assert wrong_state.value.status

    with waymark.Client("127.0.0.1:1", timeout=5) as dead, pytest.raises(waymark.Unavailable) as unavailable:
        dead.start_run("refund", REFUND)  # not retried, so it fails at once
    assert unavailable.value.retryable


@pytest.mark.asyncio
async def test_flow_drift_async() -> None:
    """A run parked under a strict drift policy, then the server restarts with a new definition."""
    async with waymark.AsyncClient(ADDRESS, wait_for_ready=True) as c:
        started = await c.start_run("drift_probe", {}, wait=True)
        assert started.run.status == run_pb2.RUN_STATUS_SUSPENDED
        await asyncio.to_thread(restart_server, "drift=bump")
        with pytest.raises(waymark.FlowDrift) as drift:
            await c.resume(started.run.id)
        assert drift.value.choices == ["restart", "abandon"]
        assert drift.value.pinned_digest != drift.value.current_digest
        restarted: Any = await c.resume(started.run.id, drift_recovery=run_service_pb2.DRIFT_RECOVERY_RESTART)
        assert restarted.restarted_as.id and restarted.restarted_as.id != started.run.id
        assert restarted.restarted_as.workflow_digest == drift.value.current_digest
