import { expect, it } from 'vitest';
import { LeaseLostError, SweeperLeaseLostError } from '../../src/journal/errors.js';
import { MAX_RUN_TIMEOUT_MS } from '../../src/journal/limits.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import { runParams, startRun, suspension } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * The run timeout's store side (docs/workflows.md "Timeouts", docs/store.md): `timeoutMs` at
 * creation fixes `deadlineAt` on the store's clock, and runListTimedOut is what the sweeper's
 * run-timeout duty reads. `advance` moves the store's time, so "the deadline passed" is a state,
 * never a sleep.
 */

const TIMED_OUT = { name: 'RunTimedOutError', message: 'the run did not finish before its deadline', reason: 'run_timed_out' };

export function runTimeoutsSection({ h }: SuiteContext): void {
  it('timeoutMs fixes deadlineAt at creation time plus the timeout (store clock); without it there is none', async () => {
    const { store } = h();
    const { run } = await store.runCreate(runParams({ timeoutMs: 90_000 }));
    expect(run.deadlineAt).toBeInstanceOf(Date);
    expect(run.deadlineAt!.getTime() - run.createdAt.getTime()).toBe(90_000);
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).deadlineAt).toEqual(run.deadlineAt);
    const { run: leased } = await startRun(store, { timeoutMs: 1_000 });
    expect(leased.deadlineAt!.getTime() - leased.createdAt.getTime()).toBe(1_000);
    const { run: none } = await store.runCreate(runParams({ timeoutMs: null }));
    expect(none.deadlineAt).toBeNull();
    expect((await store.runCreate(runParams())).run.deadlineAt).toBeNull();
  });

  it('a repeated idempotency key returns the first run with its first deadline', async () => {
    const { store, advance } = h();
    const first = await store.runCreate(runParams({ idempotencyKey: 'k', timeoutMs: 5_000 }));
    await advance(1_000);
    const again = await store.runCreate(runParams({ idempotencyKey: 'k', timeoutMs: 60_000 }));
    expect(again.created).toBe(false);
    expect(again.run.id).toBe(first.run.id);
    expect(again.run.deadlineAt!.getTime() - again.run.createdAt.getTime()).toBe(5_000);
  });

  it('refuses a timeout that is not 1 ms to MAX_RUN_TIMEOUT_MS, writing nothing', async () => {
    const { store } = h();
    for (const timeoutMs of [0, -1, 1.5, Number.NaN, MAX_RUN_TIMEOUT_MS + 1]) {
      await expect(store.runCreate(runParams({ timeoutMs, idempotencyKey: `bad-${timeoutMs}` }))).rejects.toBeInstanceOf(RangeError);
    }
    expect((await store.runList({ namespace: 'default', pageSize: 10 })).runs).toEqual([]);
    const { run } = await store.runCreate(runParams({ timeoutMs: MAX_RUN_TIMEOUT_MS }));
    expect(run.deadlineAt!.getTime() - run.createdAt.getTime()).toBe(MAX_RUN_TIMEOUT_MS);
  });

  it('runListTimedOut: unfinished runs past their deadline, earliest first, at most limit', async () => {
    const { store, advance } = h();
    const late = await store.runCreate(runParams({ timeoutMs: 3_000 }));
    const early = await store.runCreate(runParams({ timeoutMs: 1_000 }));
    const running = await startRun(store, { timeoutMs: 2_000 });
    const parked = await startRun(store, { timeoutMs: 2_500 });
    await store.journalAppend({ lease: parked.lease, entries: [suspension('wait')] });
    await store.runStatusSet({ lease: parked.lease, status: 'SUSPENDED' });
    const far = await store.runCreate(runParams({ timeoutMs: 600_000 }));
    await store.runCreate(runParams()); // no deadline: never listed
    expect(await store.runListTimedOut({ limit: 10 })).toEqual([]);

    await advance(1_500);
    expect((await store.runListTimedOut({ limit: 10 })).map((r) => r.id)).toEqual([early.run.id]);
    await advance(2_000);
    const due = await store.runListTimedOut({ limit: 10 });
    expect(due.map((r) => r.id)).toEqual([early.run.id, running.run.id, parked.run.id, late.run.id]);
    expect(due.map((r) => r.status)).toEqual(['PENDING', 'RUNNING', 'SUSPENDED', 'PENDING']);
    expect(due.map((r) => r.id)).not.toContain(far.run.id);
    expect((await store.runListTimedOut({ limit: 2 })).map((r) => r.id)).toEqual([early.run.id, running.run.id]);
    expect(await store.runListTimedOut({ limit: 0 })).toEqual([]);
  });

  it('a run that ended (or was failed for its timeout) is no longer listed; the forced end fences its holder', async () => {
    const { store, advance } = h();
    const done = await startRun(store, { timeoutMs: 1_000 });
    await store.runStatusSet({ lease: done.lease, status: 'SUCCEEDED', output: 1 });
    const running = await startRun(store, { timeoutMs: 1_000 });
    await advance(2_000);
    expect((await store.runListTimedOut({ limit: 10 })).map((r) => r.id)).toEqual([running.run.id]);

    const leader = (await store.sweeperLeaseAcquire({ holder: 'sweeper-a', ttlMs: 30_000 }))!;
    const forced = await store.runStatusForce({ runId: running.run.id, status: 'FAILED', error: TIMED_OUT, leader });
    expect(forced!.run).toMatchObject({ status: 'FAILED', error: TIMED_OUT, leaseHolder: null });
    expect(forced!.entry).toMatchObject({ kind: 'status', name: 'FAILED', payload: { status: 'FAILED', error: TIMED_OUT } });
    expect(await store.runListTimedOut({ limit: 10 })).toEqual([]);
    // The holder executing it is fenced: its next write is refused.
    await expect(store.runLeaseRenew({ lease: running.lease, ttlMs: 30_000 })).rejects.toBeInstanceOf(LeaseLostError);
    // A fenced ex-leader cannot time a run out.
    const other = await store.runCreate(runParams({ timeoutMs: 1 }));
    await advance(31_000);
    const next = (await store.sweeperLeaseAcquire({ holder: 'sweeper-b', ttlMs: 30_000 }))!;
    expect(next.epoch).toBe(leader.epoch + 1);
    await expect(store.runStatusForce({ runId: other.run.id, status: 'FAILED', error: TIMED_OUT, leader })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    expect((await store.runListTimedOut({ limit: 10 })).map((r) => r.id)).toEqual([other.run.id]);
  });

  it('runListOrphans carries the parent\'s error, so the child of a timed-out parent can be told from one of a failed parent', async () => {
    const { store, advance } = h();
    const parent = await startRun(store, { workflowName: 'parent', timeoutMs: 1_000 });
    const [wait] = await store.journalAppend({ lease: parent.lease, entries: [newEntry({ kind: 'child', name: 'kid', status: 'suspended', contentKey: 'ck:kid' })] });
    const child = await startRun(store, { workflowName: 'kid', parentRunId: parent.run.id, parentSeq: wait!.seq });
    const other = await startRun(store, { workflowName: 'parent' });
    const [otherWait] = await store.journalAppend({ lease: other.lease, entries: [newEntry({ kind: 'child', name: 'kid', status: 'suspended', contentKey: 'ck:kid' })] });
    const otherChild = await startRun(store, { workflowName: 'kid', parentRunId: other.run.id, parentSeq: otherWait!.seq });
    await store.runStatusForce({ runId: parent.run.id, status: 'FAILED', error: TIMED_OUT });
    await store.runStatusSet({ lease: other.lease, status: 'FAILED' });
    await advance(2_000);
    const orphans = await store.runListOrphans({ limit: 10, graceMs: 1_000 });
    expect(orphans.map((o) => [o.run.id, o.parentStatus, o.parentError])).toEqual(expect.arrayContaining([
      [child.run.id, 'FAILED', TIMED_OUT], [otherChild.run.id, 'FAILED', null],
    ]));
    expect(orphans).toHaveLength(2);
  });
}
