"""A unary call with its retries (docs/clients.md "Retries of unary calls"), the wait for a
connection before a call that is sent once, and the readiness check: operations (``_steps.py``)
both clients run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

from waymark import _requests, _responses, _retry
from waymark._retry import RetryPolicy
from waymark._steps import Core, Op, Sleep, Unary
from waymark.errors import error_from_rpc
from waymark.v1 import run_service_pb2


def call(core: Core, name: str, method: Callable[..., Any], request: Any, timeout: float | None) -> Op[Any]:
    """One call of RPC ``name``, retried as docs/clients.md says (see _retry.Retrier)."""
    retrier = _retry.Retrier(core.retry, timeout, core.timeout)
    if not _retry.repeatable(name, request) and core.retry.budget > 0:
        # Sent once, but not into a connection that is down: waiting for the connection
        # first repeats nothing, so a resume right after a restart works.
        wait_for = retrier.connect_timeout()
        if not (yield from connected(core, wait_for)):
            raise _retry.not_sent(f"within {wait_for:.1f} s")
        retrier.policy = RetryPolicy(budget=0)
    while True:
        try:
            return (yield Unary(method, request, retrier.attempt_timeout(), core.wait_for_ready))
        except grpc.RpcError as err:
            error = error_from_rpc(err)
            if _retry.wrong_state_after_retry(name, retrier, error):
                get = run_service_pb2.GetRunRequest(namespace=core.namespace, run_id=request.run_id)
                run = yield from call(core, "GetRun", core.runs.GetRun, get, retrier.attempt_timeout())
                return run_service_pb2.ResumeRunResponse(run=run.run)
            if _retry.gone_after_retry(name, retrier, error):
                return None
            wait = retrier.next_wait(error)
            if wait is None:
                raise error from err
        yield Sleep(wait)


def connected(core: Core, timeout: float | None) -> Op[bool]:
    """Waits (at most ``timeout`` seconds) until the channel has a connection, by a health
    Check that waits for one (wait_for_ready); any answer means connected. No connectivity
    polling, whose thread grpcio leaves behind when the channel closes."""
    try:
        yield Unary(core._health_check(), _requests.readiness_request(), timeout, wait_for_ready=True)
    except grpc.RpcError as err:
        return error_from_rpc(err).code != grpc.StatusCode.DEADLINE_EXCEEDED
    return True


def wait_ready(core: Core, timeout: float) -> Op[None]:
    """The readiness check of docs/clients.md: one grpc.health.v1 Check of the whole server,
    which must answer SERVING within ``timeout`` seconds; raises :class:`waymark.Unavailable`
    when the server cannot be reached, does not answer in time, or is not serving."""
    try:
        response = yield Unary(core._health_check(), _requests.readiness_request(), timeout)
    except grpc.RpcError as err:
        raise _responses.not_ready(core._address, timeout, error_from_rpc(err)) from err
    if not _responses.serving(response):
        raise _responses.not_ready(core._address, timeout, None)
