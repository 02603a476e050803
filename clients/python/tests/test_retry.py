"""Unary calls retry as docs/clients.md says, against a scripted in-process server: UNAVAILABLE,
and RESOURCE_EXHAUSTED with RetryInfo (not before its delay); never the final codes; only calls
that are safe to repeat; within the budget and the call's timeout."""

from __future__ import annotations

import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark.v1 import run_pb2, run_service_pb2, run_service_pb2_grpc, signal_service_pb2, signal_service_pb2_grpc

FAST = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=20)


@dataclass
class Failing(run_service_pb2_grpc.RunServiceServicer, signal_service_pb2_grpc.SignalServiceServicer):
    """Answers each call with the next (code, RetryInfo delay) of its script, then succeeds."""

    script: list[tuple[grpc.StatusCode, float | str | None]]  # a RetryInfo delay, or an ErrorInfo reason
    requests: list[Any] = field(default_factory=list)

    def _next(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        if not self.script:
            return
        code, detail = self.script.pop(0)
        if detail is not None:
            status = status_pb2.Status(code=code.value[0], message="scripted")
            if isinstance(detail, str):
                status.details.add().Pack(error_details_pb2.ErrorInfo(reason=detail, domain="waymark"))
            else:
                status.details.add().Pack(error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(nanos=int(detail * 1e9))))
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, "scripted")

    def GetRun(self, request: Any, context: grpc.ServicerContext) -> run_service_pb2.GetRunResponse:
        self._next(request, context)
        return run_service_pb2.GetRunResponse(run=run_pb2.Run(id=request.run_id))

    def StartRun(self, request: Any, context: grpc.ServicerContext) -> run_service_pb2.StartRunResponse:
        self._next(request, context)
        # As the server answers a repeated key: the first run, created = false.
        return run_service_pb2.StartRunResponse(run=run_pb2.Run(id="run-1"), created=len(self.requests) == 1)

    def ResumeRun(self, request: Any, context: grpc.ServicerContext) -> run_service_pb2.ResumeRunResponse:
        self._next(request, context)
        return run_service_pb2.ResumeRunResponse(run=run_pb2.Run(id=request.run_id))

    def DecideApproval(self, request: Any, context: grpc.ServicerContext) -> signal_service_pb2.DecideApprovalResponse:
        self._next(request, context)
        return signal_service_pb2.DecideApprovalResponse(applied=True)


def serve(failing: Failing) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    run_service_pb2_grpc.add_RunServiceServicer_to_server(failing, server)
    signal_service_pb2_grpc.add_SignalServiceServicer_to_server(failing, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, None)


def test_retries_unavailable_and_retry_info() -> None:
    failing = Failing([UNAVAILABLE, (grpc.StatusCode.RESOURCE_EXHAUSTED, 0.2), UNAVAILABLE])
    server, address = serve(failing)
    began = time.monotonic()
    with waymark.Client(address, retry=FAST) as c:
        assert c.get_run("run-7").run.id == "run-7"
    server.stop(None)
    assert len(failing.requests) == 4
    assert time.monotonic() - began >= 0.2, "retried before the delay of the server's RetryInfo"


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    ],
)
def test_final_codes_are_not_retried(code: grpc.StatusCode) -> None:
    failing = Failing([(code, None)])
    server, address = serve(failing)
    with waymark.Client(address, retry=FAST) as c, pytest.raises(waymark.WaymarkError) as info:
        c.get_run("run-1")
    server.stop(None)
    assert info.value.code == code and len(failing.requests) == 1


def test_only_what_is_safe_to_repeat() -> None:
    failing = Failing([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(failing)
    with waymark.Client(address, retry=FAST) as c:
        assert c.start_run("refund", {}).created  # the retry's created = false is this call's own
        keys = {r.idempotency_key for r in failing.requests}
        assert len(failing.requests) == 3 and len(keys) == 1 and keys.pop().startswith("client:")

        for recovery in ({"invalidate": [3]}, {"drift_recovery": waymark.DriftRecovery.RESTART}):
            failing.requests.clear()
            failing.script = [UNAVAILABLE]
            with pytest.raises(waymark.Unavailable):
                c.resume("run-1", **recovery)  # type: ignore[arg-type]  # a repeat would unpin again, or start a second run
            assert len(failing.requests) == 1

        # A plain resume is retried; a retry answered WRONG_STATE (the run is executing: an
        # earlier attempt was applied) returns the run as GetRun reads it.
        failing.requests.clear()
        failing.script = [UNAVAILABLE, (grpc.StatusCode.FAILED_PRECONDITION, "WRONG_STATE")]
        assert c.resume("run-9").run.id == "run-9"
        assert [type(r).__name__ for r in failing.requests] == ["ResumeRunRequest", "ResumeRunRequest", "GetRunRequest"]

        failing.requests.clear()
        failing.script = [UNAVAILABLE, UNAVAILABLE]
        c.preview_resume("run-1")
        c.approve("a:1", by="x")
        assert len(failing.requests) == 4
    server.stop(None)


@pytest.mark.asyncio
async def test_async_retries_and_budget() -> None:
    failing = Failing([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(failing)
    async with waymark.AsyncClient(address, retry=FAST) as c:
        assert (await c.get_run("run-2")).run.id == "run-2"
        assert len(failing.requests) == 3
        failing.script = [UNAVAILABLE] * 10_000
        short = waymark.AsyncClient(address, retry=waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=0.3))
        with pytest.raises(waymark.Unavailable):
            await short.get_run("run-3")
        await short.close()
        with pytest.raises(waymark.WaymarkError) as ended:
            await c.get_run("run-4", timeout=0.3)
        # The call's timeout ends the retries: the last error when the next wait would pass it,
        # DEADLINE_EXCEEDED when it passes during an attempt.
        assert ended.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    server.stop(None)


def test_connect_timeout_fails_fast_on_a_dead_address() -> None:
    server, address = serve(Failing([]))
    server.stop(None)
    with pytest.raises(waymark.Unavailable):
        waymark.Client(address, connect_timeout=0.5)


def test_sent_once_waits_for_a_connection() -> None:
    """A call that is sent once waits for a connection first; when none comes within the budget
    it raises Unavailable saying the request was not sent."""
    server, address = serve(Failing([]))
    server.stop(None)
    policy = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=0.3)
    with waymark.Client(address, retry=policy) as c, pytest.raises(waymark.Unavailable) as info:
        c.resume("run-1", [2])
    assert info.value.not_sent
