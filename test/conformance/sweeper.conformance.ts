import { expect, it } from 'vitest';
import { LeaseLostError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import { resolution, runParams, startRun, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted: the run was ready to continue, but every attempt to resume it failed', reason: 'interrupted' };
const RECOVER = { limit: 100, maxRecoveries: 3, graceMs: 10_000, failError: INTERRUPTED };

export function sweeperSection({ h }: SuiteContext): void {
  it('recovers expired RUNNING runs (PENDING, epoch bumped, count + 1) and fails them after maxRecoveries', async () => {
    const { store, advance } = h();
    const { run, lease } = await startRun(store);
    const healthy = await startRun(store, { leaseFor: { holder: 'h', ttlMs: TTL * 100 } });
    expect(await store.runRecoverExpired(RECOVER)).toEqual({ recovered: [], failed: [] });
    let current = lease;
    for (let attempt = 1; attempt <= 3; attempt++) {
      await advance(TTL + 1);
      expect(await store.runRecoverExpired(RECOVER)).toEqual({ recovered: [run.id], failed: [] });
      const after = await store.runGet({ runId: run.id, namespace: 'default' });
      expect(after).toMatchObject({ status: 'PENDING', recoveryCount: attempt, leaseHolder: null, leaseEpoch: current.epoch + 1 });
      await expect(store.journalAppend({ lease: current, entries: [suspension('x')] })).rejects.toBeInstanceOf(LeaseLostError);
      [current] = await store.runClaim({ holder: `w${attempt}`, ttlMs: TTL, limit: 1 }) as [typeof lease];
    }
    await advance(TTL + 1);
    expect(await store.runRecoverExpired(RECOVER)).toEqual({ recovered: [], failed: [run.id] });
    const failed = await store.runGet({ runId: run.id, namespace: 'default' });
    expect(failed).toMatchObject({ status: 'FAILED', error: INTERRUPTED, leaseHolder: null, recoveryCount: 3 });
    const journal = await store.journalList({ runId: run.id });
    expect(journal.map((e) => [e.kind, e.name])).toEqual([['status', 'FAILED']]);
    expect(journal[0]!.payload).toEqual({ status: 'FAILED', error: INTERRUPTED });
    expect((await store.runGet({ runId: healthy.run.id, namespace: 'default' })).status).toBe('RUNNING');
  });

  it('leaves a run alone during its grace period, and leaves PENDING and SUSPENDED runs alone', async () => {
    const { store, advance } = h();
    const { run } = await startRun(store, { leaseFor: { holder: 'a', ttlMs: 1_000 } });
    await store.runCreate(runParams());
    const parked = await startRun(store, { leaseFor: { holder: 'a', ttlMs: 1_000 } });
    await store.runStatusSet({ lease: parked.lease, status: 'SUSPENDED' });
    await advance(5_000); // lease expired, but the run is younger than graceMs
    expect(await store.runRecoverExpired(RECOVER)).toEqual({ recovered: [], failed: [] });
    await advance(5_001);
    expect(await store.runRecoverExpired(RECOVER)).toEqual({ recovered: [run.id], failed: [] });
  });

  it('recovers at most `limit` runs per call, and concurrent sweeps never recover one run twice', async () => {
    const { store, advance } = h();
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await startRun(store)).run.id);
    await advance(RECOVER.graceMs + TTL);
    const one = await store.runRecoverExpired({ ...RECOVER, limit: 4 });
    expect(one.recovered).toHaveLength(4);
    const rest = await Promise.all([1, 2, 3].map(() => store.runRecoverExpired({ ...RECOVER, limit: 4 })));
    const all = [...one.recovered, ...rest.flatMap((r) => r.recovered)];
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(16);
    const runs = await store.runList({ namespace: 'default', pageSize: 100 });
    expect(runs.runs.filter((r) => r.status === 'PENDING').every((r) => r.recoveryCount === 1 && r.leaseEpoch === 2)).toBe(true);
  });

  it('lists open suspensions whose deadline passed, earliest first, by kind, skipping resolved and finished runs', async () => {
    const { store, advance } = h();
    const now = (await store.clockNow()).getTime();
    const at = (ms: number) => new Date(now + ms).toISOString();
    const a = await startRun(store);
    const [noDeadline, soon, later, sleep] = await store.journalAppend({ lease: a.lease, entries: [
      suspension('no deadline'),
      suspension('soon', { payload: { deadlineAt: at(1_000), onTimeout: 'deny' } }),
      suspension('later', { payload: { deadlineAt: at(60_000) } }),
      newEntry({ kind: 'sleep', name: 'nap', status: 'suspended', payload: { deadlineAt: at(500) } }),
    ] });
    const b = await startRun(store);
    const [resolved] = await store.journalAppend({ lease: b.lease, entries: [suspension('resolved', { payload: { deadlineAt: at(100) } })] });
    await store.journalResolve({ runId: b.run.id, suspensionSeq: resolved!.seq, entry: resolution({ approved: true }) });
    const c = await startRun(store);
    await store.journalAppend({ lease: c.lease, entries: [suspension('of a cancelled run', { payload: { deadlineAt: at(100) } })] });
    await store.runStatusForce({ runId: c.run.id, status: 'CANCELLED' });

    expect(await store.suspensionListDue({ limit: 10 })).toEqual([]);
    await advance(2_000);
    const due = await store.suspensionListDue({ limit: 10 });
    expect(due.map((e) => [e.runId, e.seq])).toEqual([[a.run.id, sleep!.seq], [a.run.id, soon!.seq]]);
    expect(due[1]!.payload).toEqual({ deadlineAt: at(1_000), onTimeout: 'deny' });
    expect((await store.suspensionListDue({ limit: 10, kinds: ['approval'] })).map((e) => e.seq)).toEqual([soon!.seq]);
    expect((await store.suspensionListDue({ limit: 1 })).map((e) => e.seq)).toEqual([sleep!.seq]);
    await store.journalResolve({ runId: a.run.id, suspensionSeq: sleep!.seq, entry: resolution({ woke: true }) });
    expect((await store.suspensionListDue({ limit: 10 })).map((e) => e.seq)).toEqual([soon!.seq]);
    await advance(60_000);
    expect((await store.suspensionListDue({ limit: 10 })).map((e) => e.seq)).toEqual([soon!.seq, later!.seq]);
    expect(noDeadline!.seq).toBe(0);
  });

  it('deadlineNext is the earliest deadline still ahead, of an open suspension or an unfinished run', async () => {
    const { store, advance } = h();
    /** How far ahead the next deadline is on the store's clock, or null. */
    const ahead = async (): Promise<number | null> => {
      const next = await store.deadlineNext();
      return next.at === null ? null : next.at.getTime() - next.now.getTime();
    };
    expect(await ahead()).toBeNull();
    const now = (await store.clockNow()).getTime();
    const at = (ms: number) => new Date(now + ms).toISOString();
    const a = await startRun(store);
    const [sleep] = await store.journalAppend({ lease: a.lease, entries: [
      newEntry({ kind: 'sleep', name: 'nap', status: 'suspended', payload: { deadlineAt: at(5_000) } }),
      suspension('later', { payload: { deadlineAt: at(60_000) } }),
      suspension('no deadline'),
    ] });
    await store.runCreate(runParams({ timeoutMs: 30_000 }));
    const within = (ms: number) => expect.toSatisfy((v: number) => v > ms - 2_000 && v <= ms);
    expect(await ahead()).toEqual(within(5_000));
    await store.journalResolve({ runId: a.run.id, suspensionSeq: sleep!.seq, entry: resolution({ woke: true }) });
    expect(await ahead()).toEqual(within(30_000)); // the run's own deadline
    await advance(31_000); // passed deadlines are the due lists' (suspensionListDue, runListTimedOut), not this
    expect(await ahead()).toEqual(within(29_000));
    await store.runStatusForce({ runId: a.run.id, status: 'CANCELLED' });
    expect(await ahead()).toBeNull(); // a finished run's waits have no deadline left
  });

  it('refuses a suspension whose deadlineAt is not a timestamp, writing nothing', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await expect(store.journalAppend({ lease, entries: [suspension('bad', { payload: { deadlineAt: 'tomorrow-ish' } })] }))
      .rejects.toBeInstanceOf(TypeError);
    expect(await store.journalList({ runId: run.id })).toEqual([]);
  });
}
