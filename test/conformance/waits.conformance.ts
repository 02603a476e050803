import { expect, it } from 'vitest';
import { RunNotFoundError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import { resolution, startRun, step, suspension } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * journalWaits (store.ts): a run's `suspended` entries, each with every entry referring to it (its
 * resolutions, winning and noop, and its cancellations), in seq order; or only the one at `seq`.
 */

export function waitsSection({ h }: SuiteContext): void {
  it('lists each wait with its referrers in seq order; seq narrows it to one; other entries are not listed', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a'), suspension('first'), step('b'), suspension('second'), suspension('third')] });
    await store.journalAppend({ lease, entries: [newEntry({ kind: 'approval', name: 'third', status: 'cancelled', refSeq: 4 })] });
    await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: true }, 'r1') });
    await store.journalResolve({ runId: run.id, suspensionSeq: 1, entry: resolution({ approved: false }, 'r2') });

    const waits = await store.journalWaits({ runId: run.id, namespace: 'default' });
    expect(waits.map((w) => [w.entry.seq, w.entry.name, w.referrers.map((r) => r.status)])).toEqual([
      [1, 'first', ['resolved', 'noop']],
      [3, 'second', []],
      [4, 'third', ['cancelled']],
    ]);
    expect(waits[0]!.referrers.map((r) => r.refSeq)).toEqual([1, 1]);
    const [one] = await store.journalWaits({ runId: run.id, namespace: 'default', seq: 3 });
    expect(one!.entry).toMatchObject({ seq: 3, name: 'second', status: 'suspended' });
    expect(await store.journalWaits({ runId: run.id, namespace: 'default', seq: 2 })).toEqual([]); // a step, not a wait
  });

  it('an unknown run or one of another namespace is RunNotFoundError', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    expect(await store.journalWaits({ runId: run.id, namespace: 'default' })).toEqual([]);
    await expect(store.journalWaits({ runId: run.id, namespace: 'other' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalWaits({ runId: '0190f5a1-0000-7000-8000-000000000000', namespace: 'default' })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalWaits({ runId: 'not-a-run', namespace: 'default' })).rejects.toBeInstanceOf(RunNotFoundError);
  });
}
