import { expect, it } from 'vitest';
import { RunNotFoundError, RunStateError } from '../../src/journal/errors.js';
import { resolution, startRun, step, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function resolutionsSection({ h }: SuiteContext): void {
  /** A run parked on one approval at seq 1 (step at 0, suspension at 1, SUSPENDED status at 2). */
  async function parked() {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a'), suspension('approve refund')] });
    await store.runStatusSet({ lease, status: 'SUSPENDED' });
    return { store, run, lease };
  }

  it('the first resolution wins and wakes a SUSPENDED run (PENDING); later ones are journaled noops', async () => {
    const { store, run } = await parked();
    const first = await store.journalResolve({ runId: run.id, namespace: 'default', suspensionSeq: 1, entry: resolution({ approved: true }) });
    expect(first).toMatchObject({ applied: true, duplicate: false });
    expect(first.entry).toMatchObject({ seq: 3, status: 'resolved', refSeq: 1, payload: { approved: true } });
    expect(first.winner).toEqual(first.entry);
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('PENDING');

    const later = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: false }) });
    expect(later).toMatchObject({ applied: false, duplicate: false });
    expect(later.entry).toMatchObject({ seq: 4, status: 'noop', refSeq: 1, payload: { approved: false } });
    expect(later.winner).toEqual(first.entry);
    expect((await store.journalList({ runId: run.id, afterSeq: 2 })).map((e) => e.status)).toEqual(['resolved', 'noop']);
  });

  it('a repeated dedupeKey returns the first entry and writes nothing', async () => {
    const { store, run } = await parked();
    const first = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: true }, 'signal-1') });
    const noop = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: false }, 'signal-2') });
    const repeatFirst = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: 'changed' }, 'signal-1') });
    const repeatNoop = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: true }, 'signal-2') });
    expect(repeatFirst).toEqual({ entry: first.entry, applied: true, duplicate: true, winner: first.entry });
    expect(repeatNoop).toEqual({ entry: noop.entry, applied: false, duplicate: true, winner: first.entry });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(5);
  });

  it('applies one of many concurrent resolutions and the same dedupeKey once', async () => {
    const { store, run } = await parked();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ i }, `sig-${i % 5}`) })));
    expect(results.filter((r) => r.applied && !r.duplicate)).toHaveLength(1);
    expect(results.filter((r) => !r.duplicate)).toHaveLength(5);
    const winner = results.find((r) => r.applied && !r.duplicate)!.entry;
    expect(results.every((r) => r.winner.seq === winner.seq)).toBe(true);
    const journal = await store.journalList({ runId: run.id, afterSeq: 2 });
    expect(journal.map((e) => e.seq)).toEqual([3, 4, 5, 6, 7]);
    expect(journal.filter((e) => e.status === 'resolved')).toHaveLength(1);
  });

  it('a resolution that arrives while the run is RUNNING turns its next SUSPENDED into PENDING', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [suspension('wait')] });
    // The run read its journal (suspension open), then a signal lands before it parks.
    const r = await store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution({ ok: true }) });
    expect(r.applied).toBe(true);
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).status).toBe('RUNNING');
    const { run: after, entry } = await store.runStatusSet({ lease, status: 'SUSPENDED' });
    expect(after).toMatchObject({ status: 'PENDING', leaseHolder: null });
    expect(entry.payload).toEqual({ status: 'PENDING' });
    // The next holder reads the resolution; its own park is a real one.
    const next = await store.runClaim({ holder: 'b', ttlMs: TTL, limit: 1 });
    expect(next).toHaveLength(1);
    const parkedAgain = await store.runStatusSet({ lease: next[0]!, status: 'SUSPENDED' });
    expect(parkedAgain.run.status).toBe('SUSPENDED');
  });

  it('refuses a seq that is not a suspension, a finished run, and another namespace', async () => {
    const { store, run, lease } = await parked();
    await expect(store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution(1) })).rejects.toBeInstanceOf(RunStateError);
    await expect(store.journalResolve({ runId: run.id, suspensionSeq: 99, entry: resolution(1) })).rejects.toBeInstanceOf(RunStateError);
    await expect(store.journalResolve({ runId: run.id, namespace: 'other', suspensionSeq: 1, entry: resolution(1) }))
      .rejects.toBeInstanceOf(RunNotFoundError);
    await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution(1, 'once') });
    await store.runStatusForce({ runId: run.id, status: 'CANCELLED' });
    await expect(store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution(2) })).rejects.toBeInstanceOf(RunStateError);
    // A duplicate is still answered after the run finished: the sender learns it already landed.
    expect((await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution(1, 'once') })).duplicate).toBe(true);
    expect(lease.epoch).toBe(1);
  });
}
