import { expect, it } from 'vitest';
import { LeaseLostError } from '../../src/journal/errors.js';
import { startRun, step, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * The dead-session reclaim (store.ts runRecoverDeadSessions, docs/recovery.md "Dead sessions"): a
 * run whose holder's lease session ended is recovered at once, whatever its lease's expiry; a run
 * whose holder's session is alive, or whose holder never opened one, is never taken.
 */

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted: every attempt to resume it failed', reason: 'interrupted' };
const RECLAIM = { limit: 100, maxRecoveries: 3, failError: INTERRUPTED };
const LONG = { ttlMs: TTL * 100 };

export function leaseSessionsSection({ h }: SuiteContext): void {
  it('never takes the run of a holder whose session is alive, nor of one that never opened a session', async () => {
    const { store, advance } = h();
    await store.leaseSessionOpen({ holder: 'live' });
    await store.leaseSessionOpen({ holder: 'live' }); // idempotent
    const live = await startRun(store, { leaseFor: { holder: 'live', ...LONG } });
    const unregistered = await startRun(store, { leaseFor: { holder: 'nobody', ...LONG } });
    await advance(TTL * 200); // both leases long expired: still not this method's business
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    for (const { run } of [live, unregistered]) {
      expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', leaseEpoch: 1 });
    }
    await store.journalAppend({ lease: live.lease, entries: [step('still-mine')] });
    await store.leaseSessionClose({ holder: 'live' });
  });

  it('reclaims a dead holder\'s runs at once (PENDING, epoch bumped, count + 1) and fences the holder; other holders keep theirs', async () => {
    const { store, endLeaseSession } = h();
    await store.leaseSessionOpen({ holder: 'dead' });
    await store.leaseSessionOpen({ holder: 'alive' });
    const a = await startRun(store, { leaseFor: { holder: 'dead', ...LONG } });
    const b = await startRun(store, { leaseFor: { holder: 'dead', ...LONG } });
    const other = await startRun(store, { leaseFor: { holder: 'alive', ...LONG } });
    const parked = await startRun(store, { leaseFor: { holder: 'dead', ...LONG } });
    await store.runStatusSet({ lease: parked.lease, status: 'SUSPENDED' });
    await endLeaseSession('dead');

    const r = await store.runRecoverDeadSessions(RECLAIM);
    expect(r.failed).toEqual([]);
    expect(r.recovered.sort()).toEqual([a.run.id, b.run.id].sort());
    for (const { run, lease } of [a, b]) {
      expect(await store.runGet({ runId: run.id, namespace: 'default' }))
        .toMatchObject({ status: 'PENDING', leaseHolder: null, leaseEpoch: lease.epoch + 1, recoveryCount: 1 });
      await expect(store.journalAppend({ lease, entries: [step('stale')] })).rejects.toBeInstanceOf(LeaseLostError);
    }
    expect(await store.runGet({ runId: other.run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', leaseHolder: 'alive' });
    expect((await store.runGet({ runId: parked.run.id, namespace: 'default' })).status).toBe('SUSPENDED');
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    await store.leaseSessionClose({ holder: 'alive' });
  });

  it('forgets a dead registration once it took all its runs: later leases of that holder only expire', async () => {
    const { store, endLeaseSession } = h();
    await store.leaseSessionOpen({ holder: 'h' });
    await startRun(store, { leaseFor: { holder: 'h', ...LONG } });
    await endLeaseSession('h');
    expect((await store.runRecoverDeadSessions(RECLAIM)).recovered).toHaveLength(1);
    const [later] = await store.runClaim({ holder: 'h', ttlMs: LONG.ttlMs, limit: 1 });
    expect(later).toBeDefined();
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    // A holder that opens a session again is covered by it again.
    await store.leaseSessionOpen({ holder: 'h' });
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    await endLeaseSession('h');
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [later!.runId], failed: [] });
  });

  it('takes at most `limit` runs per call and keeps the registration until the last batch', async () => {
    const { store, endLeaseSession } = h();
    await store.leaseSessionOpen({ holder: 'h' });
    for (let i = 0; i < 5; i++) await startRun(store, { leaseFor: { holder: 'h', ...LONG } });
    await endLeaseSession('h');
    const first = await store.runRecoverDeadSessions({ ...RECLAIM, limit: 3 });
    expect(first.recovered).toHaveLength(3);
    const rest = await store.runRecoverDeadSessions({ ...RECLAIM, limit: 3 });
    expect(rest.recovered).toHaveLength(2);
    expect(new Set([...first.recovered, ...rest.recovered]).size).toBe(5);
  });

  it('a cleanly closed session leaves its runs to lease expiry; a run out of recoveries is failed', async () => {
    const { store, endLeaseSession } = h();
    await store.leaseSessionOpen({ holder: 'clean' });
    const kept = await startRun(store, { leaseFor: { holder: 'clean', ...LONG } });
    await store.leaseSessionClose({ holder: 'clean' });
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    expect((await store.runGet({ runId: kept.run.id, namespace: 'default' })).status).toBe('RUNNING');

    await store.leaseSessionOpen({ holder: 'crashy' });
    const { run } = await startRun(store, { leaseFor: { holder: 'crashy', ...LONG } });
    await endLeaseSession('crashy');
    expect(await store.runRecoverDeadSessions({ ...RECLAIM, maxRecoveries: 0 })).toEqual({ recovered: [], failed: [run.id] });
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'FAILED', error: INTERRUPTED });
    expect((await store.journalList({ runId: run.id })).map((e) => [e.kind, e.name])).toEqual([['status', 'FAILED']]);
  });
}
