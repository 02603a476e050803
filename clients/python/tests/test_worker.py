"""waymark.Worker against a scripted in-process WorkerService: what it declares (schemas from
type hints), how a task reaches a sync or async tool (input converted, idempotency key and task
handed over) and how its outcome goes back; heartbeats and a lost task; deadlines; reconnects
and registering again; a permanent refusal; a graceful stop."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
import dataclasses
import queue
import threading
from concurrent import futures
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypedDict

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark.v1 import worker_service_pb2, worker_service_pb2_grpc

WAIT = 30.0  # the longest any step may take before a test fails


class Scripted(worker_service_pb2_grpc.WorkerServiceServicer):
    """Hands out queued tasks, answers polls and heartbeats as scripted, records the rest."""

    def __init__(self) -> None:
        self.tasks: queue.Queue[worker_service_pb2.RemoteTask] = queue.Queue()
        self.completions: queue.Queue[worker_service_pb2.CompleteTaskRequest] = queue.Queue()
        self.registrations: list[worker_service_pb2.RegisterWorkerRequest] = []
        self.poll_errors: list[grpc.StatusCode] = []
        self.heartbeats: list[worker_service_pb2.HeartbeatRequest] = []
        self.lose_after = 0  # answer task_lost to this heartbeat (1-based); 0: never
        self.polls = 0
        self.lock = threading.Lock()
        self.address = ""

    def RegisterWorker(self, request: Any, context: grpc.ServicerContext) -> worker_service_pb2.RegisterWorkerResponse:
        with self.lock:
            self.registrations.append(request)
        return worker_service_pb2.RegisterWorkerResponse(worker_id=request.worker_id)

    def PollTask(self, request: Any, context: grpc.ServicerContext) -> worker_service_pb2.PollTaskResponse:
        with self.lock:
            self.polls += 1
            code = self.poll_errors.pop(0) if self.poll_errors else None
        if code is not None:
            context.abort(code, "scripted")
        try:
            return worker_service_pb2.PollTaskResponse(task=self.tasks.get(timeout=request.wait.ToTimedelta().total_seconds()))
        except queue.Empty:
            return worker_service_pb2.PollTaskResponse()

    def Heartbeat(self, request: Any, context: grpc.ServicerContext) -> worker_service_pb2.HeartbeatResponse:
        with self.lock:
            self.heartbeats.append(request)
            lost = self.lose_after > 0 and len(self.heartbeats) >= self.lose_after
        if lost:
            status = status_pb2.Status(code=grpc.StatusCode.ABORTED.value[0], message="dispatched to another worker")
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason="TASK_LOST", domain="waymark"))
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.abort(grpc.StatusCode.ABORTED, "dispatched to another worker")
        return worker_service_pb2.HeartbeatResponse()

    def CompleteTask(self, request: Any, context: grpc.ServicerContext) -> worker_service_pb2.CompleteTaskResponse:
        self.completions.put(request)
        return worker_service_pb2.CompleteTaskResponse(applied=True)

    def completion(self) -> worker_service_pb2.CompleteTaskRequest:
        return self.completions.get(timeout=WAIT)


@pytest.fixture
def scripted() -> Any:
    servicer = Scripted()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    worker_service_pb2_grpc.add_WorkerServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.address = f"127.0.0.1:{port}"
    yield servicer
    server.stop(None)


def make_worker(address: str, **kwargs: Any) -> waymark.Worker:
    kwargs.setdefault("concurrency", 1)
    return waymark.Worker(
        address, namespace="payments", poll_wait=0.05,
        backoff=waymark.Backoff(initial=0.005, maximum=0.02, give_up_after=0),
        retry=waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=10), **kwargs,
    )


class Running:
    """A worker's run() in a thread; stop() asks it to stop and waits for run() to return."""

    def __init__(self, worker: waymark.Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.worker.run(handle_signals=False)
        except BaseException as err:  # noqa: BLE001: reported by stop()
            self.error = err

    def stop(self) -> None:
        self.worker.stop()
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "run() did not return after stop()"
        if self.error is not None:
            raise self.error


@pytest.fixture
def running() -> Any:
    started: list[Running] = []

    def start(worker: waymark.Worker) -> Running:
        r = Running(worker)
        started.append(r)
        return r

    yield start
    for r in started:
        if r.thread.is_alive():
            r.worker.stop()
            r.thread.join(WAIT)


def remote_task(task_id: str, tool: str, input: Any, *, heartbeat: float = 30.0, deadline: float = 60.0) -> worker_service_pb2.RemoteTask:
    at = timestamp_pb2.Timestamp()
    at.FromDatetime(datetime.now(timezone.utc) + timedelta(seconds=deadline))
    beat = duration_pb2.Duration()
    beat.FromTimedelta(timedelta(seconds=heartbeat))
    return worker_service_pb2.RemoteTask(
        task_id=task_id, run_id="run-1", tool=tool, input=waymark.to_value(input), idempotency_key=f"key-{task_id}",
        attempt=2, fencing_token=7, deadline=at, heartbeat_timeout=beat, namespace="payments",
        traceparent="00-0192f3a45b6c7d8e9f0123456789abcd-00f067aa0ba902b7-01",
    )


@dataclasses.dataclass
class Charge:
    order: str
    amount: float
    count: int = 1


class Refund(TypedDict):
    refundId: str
    status: Literal["refunded", "pending"]


def test_declares_from_type_hints_and_serves_sync_and_async_tools(scripted: Scripted, running: Any) -> None:
    worker = make_worker(scripted.address, worker_id="w-1", queue="payments-eu")
    seen: dict[str, Any] = {}

    @worker.tool(name="charge_back", policy="ask", timeout=60, heartbeat_timeout=9, max_attempts=5)
    def charge(charge: Charge, task: waymark.Task) -> Refund:
        """Refunds an order."""
        seen["charge"], seen["task"], seen["thread"] = charge, task, threading.current_thread()
        return {"refundId": f"rf_{task.idempotency_key}_{charge.order}", "status": "refunded"}

    @worker.tool(mutating=False, input_schema={"type": "string", "minLength": 1})
    async def lookup(order: str) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"order": order, "async": True}

    r = running(worker)
    scripted.tasks.put(remote_task("t-1", "charge_back", {"order": "A-1", "amount": 42.5, "count": 2}))
    done = scripted.completion()
    assert waymark.from_value(done.output) == {"refundId": "rf_key-t-1_A-1", "status": "refunded"}
    assert (done.task_id, done.fencing_token, done.worker_id, done.namespace) == ("t-1", 7, "w-1", "payments")
    assert seen["charge"] == Charge(order="A-1", amount=42.5, count=2) and isinstance(seen["charge"].count, int)
    task = seen["task"]
    assert (task.run_id, task.attempt, task.idempotency_key, task.namespace) == ("run-1", 2, "key-t-1", "payments")
    assert task.deadline is not None and not task.cancelled.is_set()
    assert task.traceparent == "00-0192f3a45b6c7d8e9f0123456789abcd-00f067aa0ba902b7-01"
    assert seen["thread"] is not threading.main_thread() and seen["thread"] is not r.thread, "a sync tool runs in a thread"

    scripted.tasks.put(remote_task("t-2", "lookup", "B-2"))
    assert waymark.from_value(scripted.completion().output) == {"order": "B-2", "async": True}
    r.stop()

    [registration] = scripted.registrations
    assert (registration.worker_id, registration.namespace) == ("w-1", "payments")
    charge_decl, lookup_decl = registration.tools
    assert charge_decl.name == "charge_back" and charge_decl.description == "Refunds an order."
    assert charge_decl.mutating and charge_decl.policy == worker_service_pb2.TOOL_POLICY_ASK
    assert charge_decl.timeout.seconds == 60 and charge_decl.heartbeat_timeout.seconds == 9 and charge_decl.max_attempts == 5
    assert charge_decl.queue == "payments-eu"
    assert waymark.from_value(charge_decl.input_schema) == {
        "type": "object",
        "properties": {"order": {"type": "string"}, "amount": {"type": "number"}, "count": {"type": "integer"}},
        "required": ["order", "amount"],
    }
    assert waymark.from_value(charge_decl.output_schema) == {
        "type": "object",
        "properties": {"refundId": {"type": "string"}, "status": {"enum": ["refunded", "pending"]}},
        "required": ["refundId", "status"],
    }
    assert lookup_decl.name == "lookup" and not lookup_decl.mutating
    assert waymark.from_value(lookup_decl.input_schema) == {"type": "string", "minLength": 1}


class CardDeclined(waymark.NonRetryableError):
    pass


def test_failures_carry_retryability(scripted: Scripted, running: Any) -> None:
    worker = make_worker(scripted.address)

    @worker.tool
    def charge_back(charge: Charge) -> dict[str, Any]:
        if charge.order == "declined":
            raise CardDeclined("card declined: insufficient_funds")
        if charge.order == "limited":
            raise waymark.ToolError("slow down", name="RateLimited", retry_after=3)
        raise TimeoutError("provider timed out")

    running(worker)
    cases = [
        ("declined", "CardDeclined", "card declined: insufficient_funds", True, 0),
        ("flaky", "TimeoutError", "provider timed out", False, 0),
        ("limited", "RateLimited", "slow down", False, 3),
    ]
    for i, (order, name, message, non_retryable, retry_after) in enumerate(cases):
        scripted.tasks.put(remote_task(f"t-{i}", "charge_back", {"order": order, "amount": 1}))
        failure = scripted.completion().failure
        assert (failure.name, failure.message, failure.non_retryable, failure.retry_after.seconds) == (name, message, non_retryable, retry_after)
    # An input that does not fit the tool's type cannot succeed on a retry either.
    scripted.tasks.put(remote_task("t-bad", "charge_back", {"order": "x", "amount": "lots"}))
    failure = scripted.completion().failure
    assert failure.name == "InvalidInput" and failure.non_retryable


def test_lost_or_expired_task_is_cancelled_and_not_reported(scripted: Scripted, running: Any) -> None:
    scripted.lose_after = 2
    worker = make_worker(scripted.address)
    reasons: queue.Queue[str | None] = queue.Queue()

    @worker.tool
    def charge_back(charge: Charge, task: waymark.Task) -> dict[str, Any]:
        if charge.order == "ok":
            return {"refundId": "rf-ok"}
        assert task.cancelled.wait(WAIT)
        reasons.put(task.cancel_reason)
        return {"refundId": "late"}  # after a loss: must be dropped

    @worker.tool
    async def slow(order: str, task: waymark.Task) -> str:
        try:
            await asyncio.sleep(WAIT)
        except asyncio.CancelledError:
            reasons.put(f"async {task.cancel_reason}")
            raise
        return "never"

    running(worker)
    scripted.tasks.put(remote_task("t-lost", "charge_back", {"order": "lost", "amount": 1}, heartbeat=0.03))
    scripted.tasks.put(remote_task("t-expired", "slow", "late", deadline=-1))
    scripted.tasks.put(remote_task("t-ok", "charge_back", {"order": "ok", "amount": 1}))
    assert reasons.get(timeout=WAIT) == "lost"
    assert reasons.get(timeout=WAIT) == "async deadline"
    # One slot serves the three in order: the first completion is the third task's.
    assert scripted.completion().task_id == "t-ok"
    assert len(scripted.heartbeats) >= 2


def test_reconnects_and_registers_again(scripted: Scripted, running: Any) -> None:
    scripted.poll_errors = [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.NOT_FOUND]
    worker = make_worker(scripted.address)
    worker.tool(name="charge_back")(lambda charge: {"refundId": "rf"})
    running(worker)
    scripted.tasks.put(remote_task("t-1", "charge_back", {"order": "A", "amount": 1}))
    assert scripted.completion().task_id == "t-1"
    assert len(scripted.registrations) == 2, "registered at the start, then again after NOT_FOUND"


def test_run_raises_on_a_permanent_refusal() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))  # serves no WorkerService
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        worker = make_worker(f"127.0.0.1:{port}")
        worker.tool(name="charge_back")(lambda charge: {})
        with pytest.raises(waymark.WaymarkError) as info:
            worker.run(handle_signals=False)
        assert info.value.code == grpc.StatusCode.UNIMPLEMENTED
        with pytest.raises(ValueError, match="no tools"):
            make_worker(f"127.0.0.1:{port}").run(handle_signals=False)
    finally:
        server.stop(None)


def test_graceful_stop(scripted: Scripted, running: Any) -> None:
    worker = make_worker(scripted.address, concurrency=2, shutdown_grace=0.05)
    started: queue.Queue[str] = queue.Queue()
    release = threading.Event()
    reasons: queue.Queue[str | None] = queue.Queue()

    @worker.tool
    def charge_back(charge: Charge, task: waymark.Task) -> dict[str, Any]:
        started.put(charge.order)
        if charge.order == "finishes":
            assert release.wait(WAIT)
            return {"refundId": "rf-finished"}
        assert task.cancelled.wait(WAIT)
        reasons.put(task.cancel_reason)
        raise RuntimeError("stopped")

    r = running(worker)
    scripted.tasks.put(remote_task("t-finishes", "charge_back", {"order": "finishes", "amount": 1}))
    scripted.tasks.put(remote_task("t-stuck", "charge_back", {"order": "stuck", "amount": 1}))
    started.get(timeout=WAIT)
    started.get(timeout=WAIT)
    stopping = threading.Thread(target=r.stop)
    stopping.start()
    assert reasons.get(timeout=WAIT) == "shutdown"
    release.set()  # after the grace: a tool that finishes late still returns its result
    done = scripted.completion()
    assert done.task_id == "t-finishes" and waymark.from_value(done.output) == {"refundId": "rf-finished"}
    stopping.join(WAIT)
    assert not r.thread.is_alive() and r.error is None
    assert scripted.completions.empty(), "the task cancelled by the shutdown was reported"


@pytest.mark.skipif(not os.environ.get("WAYMARK_ADDRESS"), reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs this against a real server")
def test_live_retryable_and_non_retryable_failures(running: Any) -> None:
    """Against the real server test/clients/clients.test.ts starts: the workflow remote_probe
    (test/clients/workflows.ts) calls tools this worker serves. A retryable exception is
    dispatched again with the same idempotency key and the next attempt; a NonRetryableError
    fails the call at once, with its name, after one attempt."""
    address = os.environ["WAYMARK_ADDRESS"]
    suffix = secrets.token_hex(4)
    flaky, declines = f"py_flaky_{suffix}", f"py_declines_{suffix}"
    seen: list[tuple[str, int]] = []
    declined: list[int] = []
    worker = waymark.Worker(address)

    @worker.tool(name=flaky)
    async def flaky_tool(charge: Charge, task: waymark.Task) -> dict[str, Any]:
        seen.append((task.idempotency_key, task.attempt))
        if len(seen) == 1:
            raise TimeoutError("the provider timed out")  # retryable
        return {"refundId": f"rf_{charge.order}"}

    @worker.tool(name=declines)
    def declines_tool(charge: Charge) -> dict[str, Any]:
        declined.append(1)
        raise CardDeclined("card declined")

    r = running(worker)
    with waymark.Client(address, connect_timeout=30) as client:
        deadline = time.monotonic() + WAIT
        while True:
            tools = client.workers.ListTools(worker_service_pb2.ListToolsRequest(), timeout=10).tools
            if sum(1 for t in tools if t.declaration.name in (flaky, declines) and t.live_workers > 0) == 2:
                break
            assert time.monotonic() < deadline and r.thread.is_alive(), f"the tools were never listed as served: {r.error}"
            time.sleep(0.05)

        def probe(tool: str) -> Any:
            started = client.start_run("remote_probe", {"tool": tool, "args": {"order": "py-remote-1", "amount": 1}})
            return client.result(started.run.id, timeout=120)

        assert probe(flaky) == {"ok": {"refundId": "rf_py-remote-1"}}
        assert len(seen) == 2 and seen[0][0] and seen[0][0] == seen[1][0] and seen[0][1] < seen[1][1], seen
        out = probe(declines)
        assert (out["failed"], out["errorName"], out["errorMessage"]) == ("EFFECT_FAILED", "CardDeclined", "card declined")
        assert len(declined) == 1, "a non-retryable failure was dispatched again"
    r.stop()
