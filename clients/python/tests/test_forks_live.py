"""Forks and comparisons against a real ``waymark server`` (test/clients/clients.test.ts passes its
address in WAYMARK_ADDRESS; without it these tests skip): a refund parked on its approval is forked
at the approval with a denial. The preview keeps what came before; the fork ends declined by the
decision while the source still waits; the two are linked; a repeat of the fork's key returns the
same fork; the comparison marks the approval as changed."""

from __future__ import annotations

import os
import secrets

import pytest

import waymark
from waymark.v1 import run_pb2, run_service_pb2

ADDRESS = os.environ.get("WAYMARK_ADDRESS", "")
pytestmark = pytest.mark.skipif(
    not ADDRESS, reason="WAYMARK_ADDRESS is not set; npm test (test/clients/clients.test.ts) runs these against a real server"
)


def approval_seq(journal: list[run_pb2.JournalEntry]) -> int:
    return next(e.seq for e in journal if e.kind == "approval" and e.status == run_pb2.ENTRY_STATUS_SUSPENDED)


def check_comparison(cmp: run_service_pb2.CompareRunsResponse, at: int) -> None:
    assert cmp.HasField("fork_seq") and cmp.fork_seq == at
    approval = next(e for e in cmp.effects if e.kind == "approval")
    assert approval.difference == run_service_pb2.EFFECT_DIFFERENCE_CHANGED


def test_fork_at_the_approval_with_a_denial() -> None:
    with waymark.Client(ADDRESS, connect_timeout=30) as c:
        order = {"order": f"py-fork-{secrets.token_hex(4)}", "amount": 3}
        source = c.start_run("refund", order, wait_for=waymark.WaitFor.OUTSIDE_INPUT, timeout=60).run.id
        try:
            at = approval_seq(list(c.journal(source)))
            preview = c.preview_fork(source, at, decision="deny")
            assert preview.fork_seq == at and preview.kept >= at and preview.HasField("replay")

            key = f"py-live-fork-{secrets.token_hex(6)}"
            forked = c.fork(source, at, decision="deny", decided_by="python-client", idempotency_key=key, wait=True, labels={"via": "python"}, timeout=60)
            assert forked.created and forked.fork_seq == at
            assert forked.run.forked_from_run_id == source and forked.run.labels["via"] == "python"
            assert c.result(forked.run.id, timeout=60) == {"status": "declined", "by": "python-client", "timedOut": False}
            again = c.fork(source, at, decision="deny", decided_by="python-client", idempotency_key=key)
            assert not again.created and again.run.id == forked.run.id
            got = c.get_run(source)
            assert got.run.status == run_pb2.RUN_STATUS_SUSPENDED and list(got.forks) == [forked.run.id]

            check_comparison(c.compare_runs(source, forked.run.id), at)
            with pytest.raises(waymark.InvalidArgument) as invalid:
                c.fork(source, 100_000)
            assert invalid.value.reason == "INVALID_FORK"
        finally:
            c.cancel(source, "test done")


@pytest.mark.asyncio
async def test_async_fork_and_compare() -> None:
    async with waymark.AsyncClient(ADDRESS, connect_timeout=30) as c:
        order = {"order": f"py-async-fork-{secrets.token_hex(4)}", "amount": 3}
        source = (await c.start_run("refund", order, wait_for=waymark.WaitFor.OUTSIDE_INPUT, timeout=60)).run.id
        try:
            at = approval_seq([e async for e in c.journal(source)])
            assert (await c.preview_fork(source, at, decision=False)).fork_seq == at
            forked = await c.fork(source, at, decision=False, wait=True, timeout=60)
            assert forked.created and forked.run.forked_from_run_id == source
            assert (await c.result(forked.run.id, timeout=60))["status"] == "declined"
            check_comparison(await c.compare_runs(source, forked.run.id), at)
        finally:
            await c.cancel(source, "test done")
