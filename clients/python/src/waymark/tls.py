"""TLS credentials from PEM files, for a server that serves TLS itself (docs/security.md)."""

from __future__ import annotations

import pathlib

import grpc


def tls_credentials(
    *, ca_file: str | None = None, cert_file: str | None = None, key_file: str | None = None
) -> grpc.ChannelCredentials:
    """Channel credentials for ``Client(..., tls=...)``.

    ``ca_file`` is the CA bundle to trust instead of the system roots (a cluster's own CA);
    ``cert_file`` and ``key_file`` are a client certificate for a server that asks for one
    (mTLS). To verify the server's certificate against another name than the address's host,
    pass ``server_name=`` to the client.
    """
    if (cert_file is None) != (key_file is None):
        raise ValueError("a client certificate needs both cert_file and key_file")
    return grpc.ssl_channel_credentials(
        root_certificates=_read(ca_file), private_key=_read(key_file), certificate_chain=_read(cert_file)
    )


def _read(path: str | None) -> bytes | None:
    return pathlib.Path(path).read_bytes() if path is not None else None
