import { expect, it } from 'vitest';
import { LeaseLostError, RunNotFoundError, RunStateError } from '../../src/journal/errors.js';
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

  it('with leaseFor, an applied resolution takes the lease of the run it wakes in the same step: RUNNING under the holder, its RUNNING entry after it', async () => {
    const { store, run, lease } = await parked();
    const leaseFor = { holder: 'replica-a', ttlMs: TTL };
    const r = await store.journalResolve({ runId: run.id, namespace: 'default', suspensionSeq: 1, entry: resolution({ approved: true }, 'approval:r1'), leaseFor });
    expect(r).toMatchObject({ applied: true, duplicate: false, entry: { seq: 3, status: 'resolved', refSeq: 1 } });
    expect(r.taken?.lease).toMatchObject({ runId: run.id, holder: 'replica-a', epoch: lease.epoch + 1 });
    expect(r.taken?.run).toMatchObject({ status: 'RUNNING', leaseHolder: 'replica-a', nextSeq: 5 });
    expect(r.taken?.entry).toMatchObject({ seq: 4, kind: 'status', name: 'RUNNING' });
    expect((await store.journalList({ runId: run.id, afterSeq: 2 })).map((e) => `${e.seq} ${e.kind} ${e.status}`)).toEqual(['3 approval resolved', '4 status info']);
    // Nobody else claims it, the old holder is fenced, the taker writes.
    expect(await store.runClaim({ holder: 'replica-b', ttlMs: TTL, limit: 10 })).toEqual([]);
    await expect(store.journalAppend({ lease, entries: [step('stale')] })).rejects.toBeInstanceOf(LeaseLostError);
    await store.journalAppend({ lease: r.taken!.lease, entries: [step('b')] });
    // A repeat of the same decision writes and takes nothing; a later one is a noop and takes nothing.
    const repeat = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: true }, 'approval:r1'), leaseFor });
    expect(repeat).toMatchObject({ applied: true, duplicate: true });
    expect(repeat.taken ?? null).toBeNull();
    const later = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: false }, 'approval:r2'), leaseFor });
    expect(later).toMatchObject({ applied: false, duplicate: false });
    expect(later.taken ?? null).toBeNull();
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).leaseHolder).toBe('replica-a');
  });

  it('with leaseFor, a resolution that reaches a RUNNING run takes nothing: the run is flagged, and parking makes it PENDING', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a'), suspension('approve refund')] });
    const r = await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: true }), leaseFor: { holder: 'replica-a', ttlMs: TTL } });
    expect(r).toMatchObject({ applied: true, taken: null });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).leaseHolder).toBe(lease.holder);
    expect((await store.runStatusSet({ lease, status: 'SUSPENDED' })).run.status).toBe('PENDING');
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
