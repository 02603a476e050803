"""Clients and workers configured from the environment (docs/clients.md "Configuration from the
environment"): what the code leaves unset is read from WAYMARK_* variables, what it gives wins.
The live tests use the harness's servers with authentication on and with mTLS
(test/clients/clients.test.ts); without them they skip."""

from __future__ import annotations

import os

import grpc
import pytest

import waymark
from waymark import _environment

VARIABLES = ["WAYMARK_ADDRESS", "WAYMARK_TOKEN", "WAYMARK_NAMESPACE", "WAYMARK_TLS", "WAYMARK_CA_FILE",
             "WAYMARK_CLIENT_CERT_FILE", "WAYMARK_CLIENT_KEY_FILE", "WAYMARK_SERVER_NAME"]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_environment_fills_what_the_code_leaves_unset() -> None:
    env = {"WAYMARK_ADDRESS": "env-host:1", "WAYMARK_TOKEN": "env-token", "WAYMARK_NAMESPACE": "env-ns"}
    conn = _environment.resolve(None, tls=None, server_name=None, token=None, namespace=None, environ=env)
    assert (conn.address, conn.token, conn.namespace, conn.credentials) == ("env-host:1", "env-token", "env-ns", None)
    assert conn.metadata == (("authorization", "Bearer env-token"),)


def test_what_the_code_gives_wins() -> None:
    env = {"WAYMARK_ADDRESS": "env-host:1", "WAYMARK_TOKEN": "env-token", "WAYMARK_NAMESPACE": "env-ns", "WAYMARK_TLS": "1"}
    conn = _environment.resolve("code-host:2", tls=False, server_name=None, token="code-token", namespace="", environ=env)
    assert (conn.address, conn.token, conn.namespace, conn.credentials) == ("code-host:2", "code-token", "", None)


def test_defaults_when_nothing_is_set() -> None:
    conn = _environment.resolve(None, tls=None, server_name=None, token=None, namespace=None, environ={})
    assert (conn.address, conn.token, conn.namespace, conn.credentials) == ("127.0.0.1:50051", None, "", None)
    assert conn.metadata == ()


def test_tls_from_the_environment() -> None:
    conn = _environment.resolve(None, tls=None, server_name=None, token=None, namespace=None,
                                environ={"WAYMARK_TLS": "true", "WAYMARK_SERVER_NAME": "waymark.internal"})
    assert conn.credentials is not None
    assert conn.server_name_options == [("grpc.ssl_target_name_override", "waymark.internal")]
    with pytest.raises(ValueError, match="WAYMARK_CLIENT_CERT_FILE and WAYMARK_CLIENT_KEY_FILE go together"):
        _environment.resolve(None, tls=None, server_name=None, token=None, namespace=None, environ={"WAYMARK_CLIENT_CERT_FILE": "c.pem"})


def test_the_client_and_the_worker_read_the_namespace(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("WAYMARK_NAMESPACE", "env-ns")
    with waymark.Client() as client:
        assert client.namespace == "env-ns"
    with waymark.Client(namespace="code-ns") as client:
        assert client.namespace == "code-ns"
    worker = waymark.Worker()
    assert worker.namespace == "env-ns"


AUTH_ADDRESS = os.environ.get("WAYMARK_TEST_AUTH_ADDRESS", "")
TLS_ADDRESS = os.environ.get("WAYMARK_TEST_TLS_ADDRESS", "")


@pytest.mark.skipif(not AUTH_ADDRESS, reason="WAYMARK_TEST_AUTH_ADDRESS is not set; npm test runs this against a server with authentication on")
def test_address_and_token_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("WAYMARK_ADDRESS", AUTH_ADDRESS)
    clean_env.setenv("WAYMARK_TOKEN", os.environ["WAYMARK_TEST_TOKEN"])
    with waymark.Client(connect_timeout=30) as c:
        started = c.start_run("refund", {"order": "py-env", "amount": 2}, wait=True)
        decided = c.approve(started.waiting_on[0].approval_id, by="python-env")
        assert decided.approval.decided_by_key_id == os.environ["WAYMARK_TEST_KEY_ID"]
    # A token in code wins over WAYMARK_TOKEN.
    with waymark.Client(token="wm_not-a-key", retry=waymark.RetryPolicy(budget=0)) as c:
        with pytest.raises(waymark.WaymarkError) as raised:
            c.list_workflows()
        assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.skipif(not AUTH_ADDRESS, reason="WAYMARK_TEST_AUTH_ADDRESS is not set; npm test runs this against a server with authentication on")
@pytest.mark.asyncio
async def test_the_async_client_reads_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("WAYMARK_ADDRESS", AUTH_ADDRESS)
    clean_env.setenv("WAYMARK_TOKEN", os.environ["WAYMARK_TEST_TOKEN"])
    async with waymark.AsyncClient(connect_timeout=30) as c:
        assert "refund" in [w.name for w in await c.list_workflows()]


@pytest.mark.skipif(not TLS_ADDRESS, reason="WAYMARK_TEST_TLS_ADDRESS is not set; npm test runs this against a real TLS server")
def test_mtls_files_from_the_environment(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("WAYMARK_ADDRESS", TLS_ADDRESS)
    clean_env.setenv("WAYMARK_CA_FILE", os.environ["WAYMARK_TEST_TLS_CA_FILE"])
    clean_env.setenv("WAYMARK_CLIENT_CERT_FILE", os.environ["WAYMARK_TEST_TLS_CLIENT_CERT_FILE"])
    clean_env.setenv("WAYMARK_CLIENT_KEY_FILE", os.environ["WAYMARK_TEST_TLS_CLIENT_KEY_FILE"])
    clean_env.setenv("WAYMARK_SERVER_NAME", "localhost")
    with waymark.Client(connect_timeout=30) as c:
        assert "refund" in [w.name for w in c.list_workflows()]
    # tls=False in code wins: plaintext to a TLS server cannot connect.
    with pytest.raises(waymark.Unavailable):
        waymark.Client(tls=False, connect_timeout=5)
