import { expect, it } from 'vitest';
import { SweeperLeaseLostError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { JournalStore } from '../../src/store/store.js';
import { resolution, runParams, startRun, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * The sweeper leader lease (one active sweeper per store, fenced by epoch) and the scans behind
 * sweeper duty 4 (parents waiting on ended children, children of ended parents).
 */

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted: the run was ready to continue, but every attempt to resume it failed', reason: 'interrupted' };
const LEADER_TTL = 5_000;

/** A parent parked on a `child` wait, and its child run (RUNNING under a lease). */
async function parentAndChild(store: JournalStore) {
  const parent = await startRun(store, { workflowName: 'parent' });
  const [wait] = await store.journalAppend({
    lease: parent.lease, entries: [newEntry({ kind: 'child', name: 'kid', status: 'suspended', contentKey: 'ck:kid' })],
  });
  const child = await startRun(store, { workflowName: 'kid', parentRunId: parent.run.id, parentSeq: wait!.seq });
  return { parent, child, wait: wait! };
}

export function sweeperLeaderSection({ h }: SuiteContext): void {
  it('one leader at a time: acquire, refuse, take over after expiry (epoch + 1), fence the old leader', async () => {
    const { store, advance } = h();
    const a = await store.sweeperLeaseAcquire({ holder: 'sweeper-a', ttlMs: LEADER_TTL });
    expect(a).toMatchObject({ holder: 'sweeper-a' });
    expect(await store.sweeperLeaseAcquire({ holder: 'sweeper-b', ttlMs: LEADER_TTL })).toBeNull();
    const renewed = await store.sweeperLeaseRenew({ lease: a!, ttlMs: LEADER_TTL });
    expect(renewed.epoch).toBe(a!.epoch);
    expect(renewed.expiresAt.getTime()).toBeGreaterThanOrEqual(a!.expiresAt.getTime());

    await advance(LEADER_TTL + 1);
    const b = await store.sweeperLeaseAcquire({ holder: 'sweeper-b', ttlMs: LEADER_TTL });
    expect(b).toMatchObject({ holder: 'sweeper-b', epoch: a!.epoch + 1 });
    await expect(store.sweeperLeaseRenew({ lease: a!, ttlMs: LEADER_TTL })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    await store.sweeperLeaseRelease({ lease: a! }); // fenced: does nothing
    expect(await store.sweeperLeaseAcquire({ holder: 'sweeper-c', ttlMs: LEADER_TTL })).toBeNull();

    await store.sweeperLeaseRelease({ lease: b! });
    const c = await store.sweeperLeaseAcquire({ holder: 'sweeper-c', ttlMs: LEADER_TTL });
    expect(c).toMatchObject({ holder: 'sweeper-c', epoch: b!.epoch + 1 });
    await expect(store.sweeperLeaseRenew({ lease: b!, ttlMs: LEADER_TTL })).rejects.toBeInstanceOf(SweeperLeaseLostError);
  });

  it('a leader whose lease session ended is taken over at once, before its lease expires (epoch + 1); a live one is not', async () => {
    const { store, endLeaseSession } = h();
    await store.leaseSessionOpen({ holder: 'sweeper-dead' });
    await store.leaseSessionOpen({ holder: 'sweeper-live' });
    const dead = await store.sweeperLeaseAcquire({ holder: 'sweeper-dead', ttlMs: LEADER_TTL });
    expect(await store.sweeperLeaseAcquire({ holder: 'sweeper-live', ttlMs: LEADER_TTL })).toBeNull();
    await endLeaseSession('sweeper-dead');
    const live = await store.sweeperLeaseAcquire({ holder: 'sweeper-live', ttlMs: LEADER_TTL });
    expect(live).toMatchObject({ holder: 'sweeper-live', epoch: dead!.epoch + 1 });
    await expect(store.sweeperLeaseRenew({ lease: dead!, ttlMs: LEADER_TTL })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    // The new leader's session is alive: nobody takes the lease from it before it expires.
    expect(await store.sweeperLeaseAcquire({ holder: 'sweeper-other', ttlMs: LEADER_TTL })).toBeNull();
  });

  it('concurrent acquires: exactly one wins', async () => {
    const { store } = h();
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((x) => store.sweeperLeaseAcquire({ holder: `s-${x}`, ttlMs: LEADER_TTL })));
    expect(results.filter((r) => r !== null)).toHaveLength(1);
  });

  it('sweeper writes carrying a stale leader lease are refused and write nothing', async () => {
    const { store, advance } = h();
    const stale = (await store.sweeperLeaseAcquire({ holder: 'old', ttlMs: LEADER_TTL }))!;
    const { run, lease } = await startRun(store);
    const [parked] = await store.journalAppend({ lease, entries: [suspension('wait', { payload: { deadlineAt: new Date(0).toISOString() } })] });
    await advance(Math.max(LEADER_TTL, TTL) + 20_000);
    const current = (await store.sweeperLeaseAcquire({ holder: 'new', ttlMs: LEADER_TTL }))!;
    const recover = { limit: 10, maxRecoveries: 3, graceMs: 0, failError: INTERRUPTED };

    await expect(store.runRecoverExpired({ ...recover, leader: stale })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    await expect(store.journalResolve({ runId: run.id, suspensionSeq: parked!.seq, entry: resolution({ approved: false }, 'timeout:0'), leader: stale }))
      .rejects.toBeInstanceOf(SweeperLeaseLostError);
    await expect(store.runStatusForce({ runId: run.id, status: 'CANCELLED', leader: stale })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', leaseEpoch: lease.epoch, recoveryCount: 0 });
    expect(await store.journalList({ runId: run.id })).toHaveLength(1);

    expect(await store.runRecoverExpired({ ...recover, leader: current })).toEqual({ recovered: [run.id], failed: [] });
    const resolved = await store.journalResolve({ runId: run.id, suspensionSeq: parked!.seq, entry: resolution({ approved: false }, 'timeout:0'), leader: current });
    expect(resolved.applied).toBe(true);
    expect(await store.runStatusForce({ runId: run.id, status: 'CANCELLED', leader: current })).toMatchObject({ run: { status: 'CANCELLED' } });
  });

  it('lists ended children whose parent still waits on them, after the grace period, until the wait is resolved', async () => {
    const { store, advance } = h();
    const { parent, child, wait } = await parentAndChild(store);
    expect(await store.runListEndedChildren({ limit: 10, graceMs: 0 })).toEqual([]); // the child is still running
    await store.runStatusSet({ lease: child.lease, status: 'SUCCEEDED', output: { ok: true } });
    expect(await store.runListEndedChildren({ limit: 10, graceMs: 1_000 })).toEqual([]);
    await advance(1_001);
    const listed = await store.runListEndedChildren({ limit: 10, graceMs: 1_000 });
    expect(listed.map((r) => [r.id, r.status, r.parentSeq])).toEqual([[child.run.id, 'SUCCEEDED', wait.seq]]);
    expect(await store.runListEndedChildren({ limit: 0, graceMs: 0 })).toEqual([]);
    await store.journalResolve({ runId: parent.run.id, suspensionSeq: wait.seq, entry: resolution({ done: true }, `child:${child.run.id}`) });
    expect(await store.runListEndedChildren({ limit: 10, graceMs: 0 })).toEqual([]);

    // A parent that ended no longer waits: its ended children are not listed.
    const other = await parentAndChild(store);
    await store.runStatusSet({ lease: other.child.lease, status: 'FAILED', error: { name: 'E', message: 'x' } });
    await store.runStatusForce({ runId: other.parent.run.id, status: 'CANCELLED' });
    await advance(1_001);
    expect(await store.runListEndedChildren({ limit: 10, graceMs: 0 })).toEqual([]);
  });

  it('lists unfinished children of ended parents, with the parent status, after the grace period', async () => {
    const { store, advance } = h();
    const cancelled = await parentAndChild(store);
    const succeeded = await parentAndChild(store);
    const alive = await parentAndChild(store);
    const done = await parentAndChild(store);
    await store.runStatusSet({ lease: done.child.lease, status: 'SUCCEEDED' });
    await store.runStatusForce({ runId: cancelled.parent.run.id, status: 'CANCELLED' });
    await advance(10);
    await store.runStatusSet({ lease: succeeded.parent.lease, status: 'SUCCEEDED', output: null });
    await store.runStatusForce({ runId: done.parent.run.id, status: 'FAILED' });
    expect(await store.runListOrphans({ limit: 10, graceMs: 5_000 })).toEqual([]);
    await advance(5_001);
    const orphans = await store.runListOrphans({ limit: 10, graceMs: 5_000 });
    expect(orphans.map((o) => [o.run.id, o.parentStatus])).toEqual([
      [cancelled.child.run.id, 'CANCELLED'], [succeeded.child.run.id, 'SUCCEEDED'],
    ]);
    expect((await store.runListOrphans({ limit: 1, graceMs: 0 })).map((o) => o.run.id)).toEqual([cancelled.child.run.id]);
    expect(alive.child.run.status).toBe('RUNNING');
  });

  it('a journal append resets the recovery count: only recoveries in a row without progress fail a run', async () => {
    const { store, advance } = h();
    const { run } = await startRun(store, { leaseFor: { holder: 'w0', ttlMs: TTL } });
    const recover = { limit: 10, maxRecoveries: 2, graceMs: 0, failError: INTERRUPTED };
    for (let i = 1; i <= 5; i++) {
      await advance(TTL + 1);
      expect(await store.runRecoverExpired(recover)).toEqual({ recovered: [run.id], failed: [] });
      const [lease] = await store.runClaim({ holder: `w${i}`, ttlMs: TTL, limit: 1 });
      // Each resumed attempt makes progress before it dies again.
      await store.journalAppend({ lease: lease!, entries: [newEntry({ kind: 'step', name: `s${i}`, status: 'ok', contentKey: `ck${i}` })] });
      expect((await store.runGet({ runId: run.id, namespace: 'default' })).recoveryCount).toBe(0);
    }
    for (let i = 1; i <= 2; i++) {
      await advance(TTL + 1);
      expect(await store.runRecoverExpired(recover)).toEqual({ recovered: [run.id], failed: [] });
      await store.runClaim({ holder: `stuck${i}`, ttlMs: TTL, limit: 1 }); // dies before any progress
    }
    await advance(TTL + 1);
    expect(await store.runRecoverExpired(recover)).toEqual({ recovered: [], failed: [run.id] });
  });

  it('counts runs by status', async () => {
    const { store } = h();
    await store.runCreate(runParams());
    await store.runCreate(runParams());
    const { lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'SUCCEEDED' });
    expect(await store.runCountByStatus()).toEqual({ PENDING: 2, RUNNING: 0, SUSPENDED: 0, SUCCEEDED: 1, FAILED: 0, CANCELLED: 0 });
  });
}
