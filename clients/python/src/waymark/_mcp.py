"""MCP servers whose tools a namespace's runs call as ``ctx.tool("server.tool", args)``
(docs/mcp.md): the McpService calls as operations (``_steps.py``) and ``client.mcp`` of each
client, which runs them in its I/O style."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Protocol

from waymark._shells import awaitable, blocking
from waymark._steps import Core, Op
from waymark._unary import call
from waymark.v1 import mcp_service_pb2, mcp_service_pb2_grpc

if TYPE_CHECKING:
    from waymark.aio import AsyncClient
    from waymark.client import Client

__all__ = ["AsyncMcpServers", "McpServers"]


class _Mcp(Protocol):
    """What the MCP operations read of ``client.mcp``."""

    _client: Core
    stub: Any


def put(mcp: _Mcp, server: mcp_service_pb2.McpServer, *, timeout: float | None = None) -> Op[mcp_service_pb2.PutMcpServerResponse]:
    """Registers an MCP server in the client's namespace, or replaces the registration of the same
    name (``created`` is false then): a name, a transport (``http``: a Streamable HTTP URL and
    headers; ``stdio``: a command, for local development) and the tools runs may call, each with a
    policy. Answers never carry header or environment values (``"<redacted>"``); a header may
    instead be a reference (``http.header_refs``: an ``MCP_`` environment variable or a file each
    replica reads when it connects), so the secret is stored nowhere in Waymark. Needs the admin
    scope when the server has authentication on. Retried like a read: a repeat puts the same
    registration again."""
    if not isinstance(server, mcp_service_pb2.McpServer):
        raise TypeError(f"put takes a waymark.v1.McpServer, not {type(server).__name__}")
    request = mcp_service_pb2.PutMcpServerRequest(namespace=mcp._client.namespace, server=server)
    response: mcp_service_pb2.PutMcpServerResponse = yield from call(mcp._client, "PutMcpServer", mcp.stub.PutMcpServer, request, timeout)
    return response


def list_servers(mcp: _Mcp, *, timeout: float | None = None) -> Op[builtins.list[mcp_service_pb2.McpServer]]:
    """The namespace's MCP servers by name, each with ``health`` as the answering replica sees it
    (unset when that replica has not used the server)."""
    request = mcp_service_pb2.ListMcpServersRequest(namespace=mcp._client.namespace)
    response: mcp_service_pb2.ListMcpServersResponse = yield from call(mcp._client, "ListMcpServers", mcp.stub.ListMcpServers, request, timeout)
    return builtins.list(response.servers)


def remove(mcp: _Mcp, name: str, *, timeout: float | None = None) -> Op[None]:
    """Removes a registration; runs that pinned its tools keep their pin. Raises
    :class:`waymark.McpServerNotFound` for a name the namespace does not have. Sent once (a repeat
    of an applied removal would answer NOT_FOUND), after waiting for a connection."""
    request = mcp_service_pb2.RemoveMcpServerRequest(namespace=mcp._client.namespace, name=name)
    yield from call(mcp._client, "RemoveMcpServer", mcp.stub.RemoveMcpServer, request, timeout)
    return None


class McpServers:
    """``client.mcp``: registers, lists and removes MCP servers (docs/mcp.md). ``stub`` is the
    generated McpService stub."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = mcp_service_pb2_grpc.McpServiceStub(client._channel)

    put = blocking(put)
    list = blocking(list_servers)
    remove = blocking(remove)


class AsyncMcpServers:
    """``client.mcp`` of the asyncio client; see :class:`waymark.client.McpServers`."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client
        self._shell = client._shell
        self.stub = mcp_service_pb2_grpc.McpServiceStub(client._channel)

    put = awaitable(put)
    list = awaitable(list_servers)
    remove = awaitable(remove)
