"""What the blocking and the asyncio clients share: the channel opened from their arguments and
the environment, the generated stubs, the settings every call reads, and the readiness check's
callable. Each client adds the calls in its own I/O style (client.py, aio.py); what a call sends
and how its answer is read are _requests and _responses, its retries _retry, a followed stream
_follow."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc

from waymark import _environment
from waymark._retry import Backoff, RetryPolicy


class ClientCore:
    """The state of a client; ``channels`` is ``grpc`` or ``grpc.aio`` (both open channels the same
    way)."""

    def _open(
        self,
        channels: Any,
        address: str | None,
        *,
        tls: bool | grpc.ChannelCredentials | None,
        server_name: str | None,
        token: str | None,
        namespace: str | None,
        timeout: float | None,
        backoff: Backoff,
        retry: RetryPolicy,
        wait_for_ready: bool,
        options: Iterable[tuple[str, Any]],
    ) -> Any:
        """Reads the settings and opens the channel, which it returns for the client to keep with
        its own type (``grpc.Channel`` or ``grpc.aio.Channel``: the stubs' types follow it)."""
        conn = _environment.resolve(address, tls=tls, server_name=server_name, token=token, namespace=namespace)
        channel_options = [*_environment.CHANNEL_OPTIONS, *conn.server_name_options, *options]
        channel = (
            channels.secure_channel(conn.address, conn.credentials, options=channel_options)
            if conn.credentials is not None
            else channels.insecure_channel(conn.address, options=channel_options)
        )
        self.namespace = conn.namespace
        self.timeout = timeout
        self.backoff = backoff
        self.retry = retry
        self.wait_for_ready = wait_for_ready
        self._address = conn.address
        self._metadata = conn.metadata
        return channel

    def _health_check(self) -> Any:
        """grpc.health.v1 Check as a raw callable: the readiness check and the wait for a
        connection send it without the health stubs (the request is empty)."""
        channel: Any = getattr(self, "_channel")
        return channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=lambda r: r, response_deserializer=lambda r: r
        )
