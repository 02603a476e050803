"""The client over TLS against the harness's TLS server (mTLS required), which
test/clients/clients.test.ts starts and names in WAYMARK_TEST_TLS_ADDRESS with the CA and a
client certificate. Without it these tests skip."""

from __future__ import annotations

import os

import pytest

import waymark

ADDRESS = os.environ.get("WAYMARK_TEST_TLS_ADDRESS", "")
live = pytest.mark.skipif(not ADDRESS, reason="WAYMARK_TEST_TLS_ADDRESS is not set; npm test runs these against a real TLS server")


def files() -> dict[str, str]:
    return {
        "ca_file": os.environ["WAYMARK_TEST_TLS_CA_FILE"],
        "cert_file": os.environ["WAYMARK_TEST_TLS_CLIENT_CERT_FILE"],
        "key_file": os.environ["WAYMARK_TEST_TLS_CLIENT_KEY_FILE"],
    }


@live
def test_lists_workflows_over_mtls() -> None:
    creds = waymark.tls_credentials(**files())
    with waymark.Client(ADDRESS, tls=creds, server_name="localhost", connect_timeout=30) as c:
        assert "refund" in [w.name for w in c.list_workflows()]


@live
@pytest.mark.asyncio
async def test_async_client_over_mtls() -> None:
    creds = waymark.tls_credentials(**files())
    async with waymark.AsyncClient(ADDRESS, tls=creds, server_name="localhost", connect_timeout=30) as c:
        assert "refund" in [w.name for w in await c.list_workflows()]


@live
def test_without_a_client_certificate_the_call_is_unavailable() -> None:
    creds = waymark.tls_credentials(ca_file=files()["ca_file"])
    with waymark.Client(ADDRESS, tls=creds, server_name="localhost", retry=waymark.RetryPolicy(budget=0)) as c:
        with pytest.raises(waymark.Unavailable):
            c.list_workflows()


def test_half_a_client_certificate_is_refused() -> None:
    with pytest.raises(ValueError, match="both cert_file and key_file"):
        waymark.tls_credentials(cert_file="client.crt")
