"""Where a client or worker finds its server: what the code passes, else the environment (as
Temporal's clients read TEMPORAL_ADDRESS), else the defaults (docs/clients.md "Configuration from
the environment"). The names are the CLI's and the Go and TypeScript clients', so one shell set up
for ``waymark`` serves every client."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from waymark.tls import tls_credentials

DEFAULT_ADDRESS = "127.0.0.1:50051"

# round_robin spreads calls over every address a "dns:///" target resolves to (a headless
# Kubernetes Service). Retries are not grpcio's: waymark._retry.Retrier applies the policy of
# docs/clients.md, which needs the request to decide what is safe to repeat.
SERVICE_CONFIG: dict[str, Any] = {"loadBalancingConfig": [{"round_robin": {}}]}


CHANNEL_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.service_config", json.dumps(SERVICE_CONFIG)),
    # Keep follow-streams alive through proxies; 30 s is the smallest client ping interval most
    # servers and proxies accept.
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.max_receive_message_length", 16 << 20),
    # Reconnect as fast as calls retry (grpcio's default starts at 1 s and grows to 2 min), so a
    # server back from a restart is found within the retry policy's own backoff.
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 5_000),
]

ADDRESS = "WAYMARK_ADDRESS"
TOKEN = "WAYMARK_TOKEN"
NAMESPACE = "WAYMARK_NAMESPACE"
TLS = "WAYMARK_TLS"
CA_FILE = "WAYMARK_CA_FILE"
CERT_FILE = "WAYMARK_CLIENT_CERT_FILE"
KEY_FILE = "WAYMARK_CLIENT_KEY_FILE"
SERVER_NAME = "WAYMARK_SERVER_NAME"


@dataclass(frozen=True)
class Connection:
    """The settings a channel is opened with, each from the code or else the environment."""

    address: str
    #: None: plaintext HTTP/2.
    credentials: grpc.ChannelCredentials | None
    server_name: str | None
    token: str | None
    #: "" is the server's default namespace.
    namespace: str

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    @property
    def server_name_options(self) -> list[tuple[str, str]]:
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []


def resolve(
    address: str | None,
    *,
    tls: bool | grpc.ChannelCredentials | None,
    server_name: str | None,
    token: str | None,
    namespace: str | None,
    environ: Mapping[str, str] | None = None,
) -> Connection:
    """The connection for these arguments: each one left ``None`` is read from ``environ``
    (default ``os.environ``; empty values count as unset). ``tls=False`` means plaintext whatever
    the environment says; ``tls=True`` takes the CA and client certificate files from it;
    ``tls=None`` turns TLS on when WAYMARK_TLS=1 or any of the files or WAYMARK_SERVER_NAME is
    set. Credentials passed in code are used as they are."""
    env = os.environ if environ is None else environ

    def read(name: str) -> str | None:
        return env.get(name) or None

    env_server_name = read(SERVER_NAME) if server_name is None else None
    return Connection(
        address=address or read(ADDRESS) or DEFAULT_ADDRESS,
        credentials=_credentials(tls, read, env_server_name is not None),
        server_name=server_name if server_name is not None else env_server_name,
        token=token if token is not None else read(TOKEN),
        namespace=namespace if namespace is not None else (read(NAMESPACE) or ""),
    )


def _credentials(
    tls: bool | grpc.ChannelCredentials | None, read: Callable[[str], str | None], server_name_given: bool
) -> grpc.ChannelCredentials | None:
    if isinstance(tls, grpc.ChannelCredentials):
        return tls
    if tls is False:
        return None
    ca, cert, key = read(CA_FILE), read(CERT_FILE), read(KEY_FILE)
    wanted = tls is True or bool(re.fullmatch(r"1|true|yes", read(TLS) or "", re.IGNORECASE))
    if not (wanted or ca or cert or key or server_name_given):
        return None
    if (cert is None) != (key is None):
        raise ValueError(f"{CERT_FILE} and {KEY_FILE} go together (a client certificate and its private key)")
    return tls_credentials(ca_file=ca, cert_file=cert, key_file=key)


