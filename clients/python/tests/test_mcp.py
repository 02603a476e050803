"""MCP servers from Python: ``client.mcp`` (sync and asyncio) puts, lists and removes
registrations with the client's namespace, retries put and list like reads, sends a removal once,
and raises the typed McpServerNotFound, against a scripted in-process server."""

from __future__ import annotations

from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

import waymark
from waymark.v1 import mcp_service_pb2, mcp_service_pb2_grpc, worker_service_pb2

FAST = waymark.RetryPolicy(initial=0.005, maximum=0.02, budget=20)
UNAVAILABLE = (grpc.StatusCode.UNAVAILABLE, None, {})

BILLING = mcp_service_pb2.McpServer(
    name="billing",
    http=mcp_service_pb2.McpHttpTransport(
        url="http://127.0.0.1:8931/mcp",
        headers={"x-tenant": "acme"},
        # A header by reference: each replica reads MCP_BILLING_TOKEN from its own environment.
        header_refs={"authorization": mcp_service_pb2.McpSecretRef(env="MCP_BILLING_TOKEN", prefix="Bearer ")},
    ),
    tools={"refund": mcp_service_pb2.McpToolRule(policy=worker_service_pb2.TOOL_POLICY_ASK)},
)


@dataclass
class ScriptedMcp(mcp_service_pb2_grpc.McpServiceServicer):
    """Answers each call with the next (code, ErrorInfo reason, metadata) of its script, then succeeds."""

    script: list[tuple[grpc.StatusCode, str | None, dict[str, str]]]
    requests: list[Any] = field(default_factory=list)

    def _next(self, request: Any, context: grpc.ServicerContext) -> None:
        self.requests.append(request)
        if not self.script:
            return
        code, reason, metadata = self.script.pop(0)
        status = status_pb2.Status(code=code.value[0], message="scripted")
        if reason is not None:
            status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="waymark", metadata=metadata))
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(code, "scripted")

    def PutMcpServer(self, request: Any, context: grpc.ServicerContext) -> mcp_service_pb2.PutMcpServerResponse:
        self._next(request, context)
        return mcp_service_pb2.PutMcpServerResponse(server=request.server, created=True)

    def ListMcpServers(self, request: Any, context: grpc.ServicerContext) -> mcp_service_pb2.ListMcpServersResponse:
        self._next(request, context)
        health = mcp_service_pb2.McpServerHealth(state="unreachable", consecutive_failures=2, last_error="fetch failed")
        return mcp_service_pb2.ListMcpServersResponse(servers=[mcp_service_pb2.McpServer(name="billing", health=health)])

    def RemoveMcpServer(self, request: Any, context: grpc.ServicerContext) -> mcp_service_pb2.RemoveMcpServerResponse:
        self._next(request, context)
        return mcp_service_pb2.RemoveMcpServerResponse()


def serve(mcp: ScriptedMcp) -> tuple[grpc.Server, str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    mcp_service_pb2_grpc.add_McpServiceServicer_to_server(mcp, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def test_mcp_calls_carry_the_namespace_and_retry_only_what_is_safe() -> None:
    scripted = ScriptedMcp([UNAVAILABLE, UNAVAILABLE])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST, namespace="payments") as c:
        put = c.mcp.put(BILLING)
        assert put.created and put.server == BILLING
        assert len(scripted.requests) == 3 and scripted.requests[2].namespace == "payments"
        scripted.script = [UNAVAILABLE]
        servers = c.mcp.list()
        assert [s.name for s in servers] == ["billing"]
        assert servers[0].health.state == "unreachable" and servers[0].health.consecutive_failures == 2
        assert len(scripted.requests) == 5 and scripted.requests[-1].namespace == "payments"
        scripted.script = [UNAVAILABLE]
        with pytest.raises(waymark.WaymarkError):
            c.mcp.remove("billing")
        assert len(scripted.requests) == 6 and scripted.requests[-1].name == "billing"
        assert c.mcp.remove("billing") is None
        with pytest.raises(TypeError):
            c.mcp.put({"name": "billing"})  # type: ignore[arg-type]
    server.stop(None)


def test_mcp_server_not_found_is_typed() -> None:
    scripted = ScriptedMcp([(grpc.StatusCode.NOT_FOUND, "MCP_SERVER_NOT_FOUND", {"server": "billing"})])
    server, address = serve(scripted)
    with waymark.Client(address, retry=FAST) as c:
        with pytest.raises(waymark.McpServerNotFound) as missing:
            c.mcp.remove("billing")
        assert (missing.value.server, missing.value.code) == ("billing", grpc.StatusCode.NOT_FOUND)
    server.stop(None)


@pytest.mark.asyncio
async def test_async_mcp() -> None:
    scripted = ScriptedMcp([UNAVAILABLE])
    server, address = serve(scripted)
    async with waymark.AsyncClient(address, retry=FAST, namespace="payments") as c:
        assert (await c.mcp.put(BILLING)).created and len(scripted.requests) == 2
        assert [s.name for s in await c.mcp.list()] == ["billing"]
        scripted.script = [(grpc.StatusCode.NOT_FOUND, "MCP_SERVER_NOT_FOUND", {"server": "gone"})]
        with pytest.raises(waymark.McpServerNotFound):
            await c.mcp.remove("gone")
        assert {r.namespace for r in scripted.requests} == {"payments"}
    server.stop(None)
