"""The client against the harness's server with authentication on, which
test/clients/clients.test.ts starts and names in WAYMARK_TEST_AUTH_ADDRESS with an API key in
WAYMARK_TEST_TOKEN (its id in WAYMARK_TEST_KEY_ID). Without it these tests skip."""

from __future__ import annotations

import os

import grpc
import pytest

import waymark

ADDRESS = os.environ.get("WAYMARK_TEST_AUTH_ADDRESS", "")
live = pytest.mark.skipif(not ADDRESS, reason="WAYMARK_TEST_AUTH_ADDRESS is not set; npm test runs these against a server with authentication on")


@live
def test_refund_with_a_key_records_the_key_in_the_decision() -> None:
    with waymark.Client(ADDRESS, token=os.environ["WAYMARK_TEST_TOKEN"], connect_timeout=30) as c:
        started = c.start_run("refund", {"order": "py-auth", "amount": 2}, wait=True)
        approval_id = started.waiting_on[0].approval_id
        decided = c.approve(approval_id, by="python-client")
        assert decided.approval.decided_by_key_id == os.environ["WAYMARK_TEST_KEY_ID"]


@live
def test_without_a_key_the_call_is_unauthenticated() -> None:
    with waymark.Client(ADDRESS, retry=waymark.RetryPolicy(budget=0)) as c:
        with pytest.raises(waymark.WaymarkError) as raised:
            c.list_workflows()
        assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
