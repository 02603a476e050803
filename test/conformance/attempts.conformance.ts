import { expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { startRun, step } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/** The `attempt` of effect entries (docs/journal.md "Retries") round-trips through every write and read path. */
export function attemptsSection({ h }: SuiteContext): void {
  it('keeps each entry\'s attempt through single and batched appends and journalList; null when none was given', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const one = await store.journalAppend({ lease, entries: [step('a', { attempt: 1 })] });
    const timer = newEntry({
      kind: 'step', name: 'b', status: 'suspended', contentKey: 'ck:b', attempt: 3,
      payload: { key: 'retry', title: 'retry', deadlineAt: '2000-01-01T00:00:00.000Z', onTimeout: {}, schema: {}, schemaHash: 'h' },
    });
    const batch = await store.journalAppend({ lease, entries: [step('b', { status: 'error', attempt: 2 }), timer, step('c')] });
    // Concurrent appends on one lease may be group-committed into one statement.
    const together = await Promise.all([3, 4].map((n) => store.journalAppend({ lease, entries: [step(`g${n}`, { attempt: n })] })));
    expect([...one, ...batch, ...together.flat()].map((e) => e.attempt)).toEqual([1, 2, 3, null, 3, 4]);
    const listed = await store.journalList({ runId: run.id });
    const pairs = listed.map((e) => [e.name, e.attempt]);
    expect(pairs.slice(0, 4)).toEqual([['a', 1], ['b', 2], ['b', 3], ['c', null]]);
    // The two concurrent appends may take their seqs in either order.
    expect(pairs.slice(4).sort()).toEqual([['g3', 3], ['g4', 4]]);
    expect((await store.suspensionListDue({ limit: 10 })).map((e) => e.attempt)).toEqual([3]);
  });
}
