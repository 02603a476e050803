"""What the blocking and the asyncio clients share: the constructor, the channel opened from its
arguments and the environment, the settings every call reads, and the readiness check's
callable. Each client adds its stubs and binds the operations (_runs, _signals, _flows, _unary)
to its shell (_shells), which does their I/O in its style."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc

from waymark import _environment
from waymark._retry import Backoff, RetryPolicy


class ClientCore:
    """The state of a client, and its constructor: each client names the module its channel comes
    from (``_channels``: ``grpc`` or ``grpc.aio``, which open channels the same way) and adds its
    stubs, its shell (``_shells.py``) and what ``connect_timeout`` means to it in ``_attach``."""

    _channels: Any

    def __init__(
        self,
        address: str | None = None,
        *,
        tls: bool | grpc.ChannelCredentials | None = None,
        server_name: str | None = None,
        token: str | None = None,
        namespace: str | None = None,
        timeout: float | None = 30.0,
        backoff: Backoff = Backoff(),
        retry: RetryPolicy = RetryPolicy(),
        connect_timeout: float | None = None,
        wait_for_ready: bool = False,
        options: Iterable[tuple[str, Any]] = (),
    ) -> None:
        conn = _environment.resolve(address, tls=tls, server_name=server_name, token=token, namespace=namespace)
        channel_options = [*_environment.CHANNEL_OPTIONS, *conn.server_name_options, *options]
        self._channel = (
            self._channels.secure_channel(conn.address, conn.credentials, options=channel_options)
            if conn.credentials is not None
            else self._channels.insecure_channel(conn.address, options=channel_options)
        )
        self.namespace = conn.namespace
        self.timeout = timeout
        self.backoff = backoff
        self.retry = retry
        self.wait_for_ready = wait_for_ready
        self._address = conn.address
        self._metadata = conn.metadata
        self._attach(connect_timeout)

    def _attach(self, connect_timeout: float | None) -> None:
        raise NotImplementedError

    def _health_check(self) -> Any:
        """grpc.health.v1 Check as a raw callable: the readiness check and the wait for a
        connection send it without the health stubs (the request is empty)."""
        return self._channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=lambda r: r, response_deserializer=lambda r: r
        )
