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
import time
import urllib.request
import uuid
from datetime import timedelta
from typing import Any

import grpc
import pytest

import waymark
from waymark.v1 import run_pb2, signal_service_pb2

ADDRESS = os.environ.get("WAYMARK_ADDRESS", "")
REPLICA = os.environ.get("WAYMARK_REPLICA_ADDRESS", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs these against a real server"
)

# The order tells the harness's stand-in payment provider which test's refund it charged: it
# checks that each of these orders was charged exactly once.
REFUND = {"order": "py-A-1001", "amount": 42.5}
REFUND_ASYNC = {"order": "py-async-A-1001", "amount": 42.5}


def restart_server(query: str) -> None:
    """Asks the harness to restart the server; returns once the new one listens."""
    control("WAYMARK_RESTART_URL", "", query)


def control(env: str, path: str, query: str) -> None:
    """Posts to one of the harness's restart endpoints (the URL in ``env``, then ``path``)."""
    request = urllib.request.Request(f"{os.environ[env]}{path}?{query}", method="POST")
    with urllib.request.urlopen(request, timeout=120) as response:
        assert response.status == 200, response.read()


def client(address: str = ADDRESS, **options: Any) -> waymark.Client:
    # The default options: after a restart, calls ride on the client's own retry policy.
    return waymark.Client(address, connect_timeout=30, **options)


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
                for event in c.events(run_id, follow_suspended=True, on_reconnect=lambda r: reconnects.append(r.after_seq)):
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
    async with waymark.AsyncClient(ADDRESS, connect_timeout=30) as c:
        started = await c.start_run("refund", REFUND_ASYNC)
        run_id = started.run.id
        events: list[run_pb2.RunEvent] = []
        reconnects: list[int] = []
        parked = asyncio.Event()

        async def follow() -> None:
            async for event in c.events(run_id, follow_suspended=True, on_reconnect=lambda r: reconnects.append(r.after_seq)):
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

    with waymark.Client("127.0.0.1:1", retry=waymark.RetryPolicy(budget=1)) as dead, pytest.raises(waymark.Unavailable) as unavailable:
        dead.start_run("refund", REFUND)  # retried (with a generated idempotency key) for the budget
    assert unavailable.value.retryable
    with pytest.raises(waymark.Unavailable):
        waymark.Client("127.0.0.1:1", connect_timeout=1)

    with client() as c:
        cancelled = c.start_run("drift_probe", {})
        c.cancel(cancelled.run.id, "not needed")
        with pytest.raises(waymark.RunFailed) as failed:
            c.result(cancelled.run.id, timeout=30)
        assert failed.value.cancelled and failed.value.status == waymark.RunStatus.CANCELLED


def test_start_run_wait_for() -> None:
    """``wait_for`` waits through the run's timer to its approval (OUTSIDE_INPUT); END with a short
    ``timeout`` answers the run as it stands (``wait_complete`` false); after the decision END
    answers the run that ended (issue 30)."""
    with waymark.Client(ADDRESS) as c:
        key = f"py-nap-{uuid.uuid4()}"
        at_input = c.start_run("nap_then_approve", {}, idempotency_key=key, wait_for=waymark.WaitFor.OUTSIDE_INPUT)
        assert at_input.run.status == run_pb2.RUN_STATUS_SUSPENDED and at_input.wait_complete
        assert [(w.kind, w.name) for w in at_input.waiting_on] == [("approval", "Go on after the nap?")]
        assert "sleep" in [e.kind for e in c.journal(at_input.run.id)]
        early = c.start_run("nap_then_approve", {}, idempotency_key=key, wait_for=waymark.WaitFor.END, timeout=1.5)
        assert not early.created and not early.wait_complete and early.run.status == run_pb2.RUN_STATUS_SUSPENDED
        c.approve(at_input.waiting_on[0].approval_id, by="py-test")
        ended = c.start_run("nap_then_approve", {}, idempotency_key=key, wait_for=waymark.WaitFor.END, timeout=60)
        assert ended.wait_complete and ended.run.status == run_pb2.RUN_STATUS_SUCCEEDED


def test_run_timeout() -> None:
    """``run_timeout`` is the run's deadline (StartRun ``timeout``), not the call's; a negative one is refused."""
    # No connect_timeout: its single readiness check fails at once while a channel is still
    # reconnecting after an earlier test's server restart; StartRun's own retries ride through that.
    with waymark.Client(ADDRESS) as c:
        started = c.start_run("drift_probe", {}, run_timeout=timedelta(seconds=90, milliseconds=500), timeout=10)
        run = started.run
        assert run.deadline_time.ToDatetime() - run.create_time.ToDatetime() == timedelta(seconds=90.5)
        assert c.get_run(run.id).run.deadline_time == run.deadline_time
        plain = c.start_run("drift_probe", {}, run_timeout=None)
        assert not plain.run.HasField("deadline_time")
        with pytest.raises(waymark.InvalidArgument) as invalid:
            c.start_run("drift_probe", {}, run_timeout=-1)
        assert [v.field for v in invalid.value.field_violations] == ["timeout"]
        for run_id in (run.id, plain.run.id):
            c.cancel(run_id, "test done")


@pytest.mark.asyncio
async def test_flow_drift_async() -> None:
    """A run parked under a strict drift policy, then the server restarts with a new definition."""
    async with waymark.AsyncClient(ADDRESS, connect_timeout=30) as c:
        started = await c.start_run("drift_probe", {}, wait=True)
        assert started.run.status == run_pb2.RUN_STATUS_SUSPENDED
        await asyncio.to_thread(restart_server, "drift=bump")
        with pytest.raises(waymark.FlowDrift) as drift:
            await c.resume(started.run.id)
        assert drift.value.choices == ["restart", "abandon"]
        assert drift.value.pinned_digest != drift.value.current_digest
        restarted: Any = await c.resume(started.run.id, drift_recovery=waymark.DriftRecovery.RESTART)
        assert restarted.restarted_as.id and restarted.restarted_as.id != started.run.id
        assert restarted.restarted_as.workflow_digest == drift.value.current_digest


def parked_probe(c: waymark.Client) -> tuple[str, str]:
    """A drift_probe run, parked on its approval: the run's id and the approval's."""
    started = c.start_run("drift_probe", {}, wait=True)
    assert started.run.status == waymark.RunStatus.SUSPENDED
    approvals = list(c.list_approvals(run_id=started.run.id))
    assert len(approvals) == 1
    return started.run.id, approvals[0].id


def check_stream(c: waymark.Client, run_id: str, events: list[run_pb2.RunEvent]) -> None:
    """The stream delivered exactly the run's journal, in order, ending SUCCEEDED."""
    assert [e.seq for e in events] == [e.seq for e in c.journal(run_id)], "a gap or a repeat"
    assert events[-1].status_changed.status == waymark.RunStatus.SUCCEEDED


def test_followers_survive_restarts_farther_apart_than_give_up() -> None:
    """A sync and an asyncio follower of a parked run, through two server restarts farther apart
    than their give-up window (each restart well within it): a parked run sends no events, so
    only successful reconnects tell them the server came back. Both reconnect each time, then see
    the run finish with every event once."""
    # The window must be longer than a restart takes, which on a busy machine is anything from 2
    # to 30 s: a first restart measures it. A SIGTERM restart also drains first, for up to the
    # server's shutdown grace (WAYMARK_SHUTDOWN_GRACE_MS, 10 s by default), before the new server
    # can listen.
    began = time.monotonic()
    restart_server("signal=SIGKILL")
    give_up = max(10.0, 3 * (time.monotonic() - began)) + 10.0
    backoff = waymark.Backoff(initial=0.1, maximum=1.0, give_up_after=give_up)
    with client(backoff=backoff) as c:
        run_id, approval_id = parked_probe(c)
        streams: dict[str, list[run_pb2.RunEvent]] = {"sync": [], "async": []}
        reconnects: dict[str, list[int]] = {"sync": [], "async": []}
        outcomes: dict[str, queue.Queue[BaseException | None]] = {"sync": queue.Queue(), "async": queue.Queue()}
        parked = {"sync": threading.Event(), "async": threading.Event()}

        def collect(kind: str, event: run_pb2.RunEvent) -> None:
            streams[kind].append(event)
            if event.status_changed.status == waymark.RunStatus.SUSPENDED:
                parked[kind].set()

        def follow_sync() -> None:
            try:
                for event in c.events(run_id, follow_suspended=True, on_reconnect=lambda r: reconnects["sync"].append(r.after_seq)):
                    collect("sync", event)
                outcomes["sync"].put(None)
            except BaseException as err:  # handed to the test thread
                outcomes["sync"].put(err)

        async def follow_async() -> None:
            try:
                async with waymark.AsyncClient(ADDRESS, backoff=backoff) as ac:
                    async for event in ac.events(
                        run_id, follow_suspended=True, on_reconnect=lambda r: reconnects["async"].append(r.after_seq)
                    ):
                        collect("async", event)
                outcomes["async"].put(None)
            except BaseException as err:
                outcomes["async"].put(err)

        threading.Thread(target=follow_sync, daemon=True).start()
        threading.Thread(target=lambda: asyncio.run(follow_async()), daemon=True).start()
        assert parked["sync"].wait(60) and parked["async"].wait(60), "the followers never got the run's history"

        took = []
        for signal, then in (("SIGKILL", give_up + 3), ("SIGTERM", 2)):
            began = time.monotonic()
            restart_server(f"signal={signal}")
            took.append(round(time.monotonic() - began, 1))
            # After the first: longer than the window, with no event; after the second, time to
            # reconnect (backoff at most 1 s).
            time.sleep(then)
        for kind in streams:
            assert outcomes[kind].empty(), f"the {kind} follower stopped (window {give_up:.0f} s, restarts took {took} s): {outcomes[kind].get()}"
        c.approve(approval_id, by="py-give-up")
        for kind in streams:
            error = outcomes[kind].get(timeout=120)
            assert error is None, f"{kind}: {error}"
            assert len(reconnects[kind]) >= 2, f"{kind}: {reconnects[kind]}"
            check_stream(c, run_id, streams[kind])


def test_decisions_during_rolling_restart() -> None:
    """Decisions sent (sync and asyncio) while a rolling restart of two replicas has the client's
    replica down succeed: the client retries them until the replica is back. result(), followed
    on the other replica, rides through that replica's restart and returns each run's output."""
    with client() as c, client(REPLICA) as other:
        sync_run, sync_approval = parked_probe(c)
        async_run, async_approval = parked_probe(c)
        results: queue.Queue[tuple[str, Any]] = queue.Queue()

        def wait_result(run_id: str) -> None:
            try:
                results.put((run_id, other.result(run_id, timeout=120)))
            except BaseException as err:
                results.put((run_id, err))

        for run_id in (sync_run, async_run):
            threading.Thread(target=wait_result, args=(run_id,), daemon=True).start()

        async def decide_async() -> signal_service_pb2.DecideApprovalResponse:
            async with waymark.AsyncClient(ADDRESS) as ac:
                return await ac.approve(async_approval, by="py-async-rolling")

        control("WAYMARK_ROLLING_RESTART_URL", "", "signal=SIGTERM")  # answers once the first replica is down
        decided_async: queue.Queue[Any] = queue.Queue()

        def run_decide_async() -> None:
            try:
                decided_async.put(asyncio.run(decide_async()))
            except BaseException as err:
                decided_async.put(err)

        threading.Thread(target=run_decide_async, daemon=True).start()
        decided = c.approve(sync_approval, by="py-rolling")
        assert decided.approval.state == waymark.ApprovalState.APPROVED and decided.approval.decided_by == "py-rolling"
        decided_a = decided_async.get(timeout=120)
        assert decided_a.approval.state == waymark.ApprovalState.APPROVED and decided_a.approval.decided_by == "py-async-rolling"
        control("WAYMARK_ROLLING_RESTART_URL", "/wait", "")
        outcomes = dict(results.get(timeout=120) for _ in range(2))
        assert outcomes == {sync_run: {"done": True}, async_run: {"done": True}}
