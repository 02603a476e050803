import { expect, it } from 'vitest';
import { RunNotFoundError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import { startRun, step } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * journalSpend (store.ts): a run tree's spend and open reservations, folded by the store, the same
 * numbers engine/read/spend.ts used to fold from every entry of every run of the tree.
 */

const intent = (name: string, estimatedCostUsd: number | null) =>
  newEntry({ kind: 'model', name, status: 'running', contentKey: `ck:${name}`, payload: estimatedCostUsd === null ? {} : { estimatedCostUsd } });
const outcome = (name: string, refSeq: number, costUsd: number) =>
  newEntry({ kind: 'model', name, status: 'ok', contentKey: `ck:${name}`, refSeq, costUsd, payload: {} });

export function spendSection({ h }: SuiteContext): void {
  it('sums own and children\'s costs and the estimates of intents nothing refers to yet, down to maxDepth', async () => {
    const { store } = h();
    const root = await startRun(store);
    const [i1, , i2] = await store.journalAppend({ lease: root.lease, entries: [intent('m1', 0.25), step('s1'), intent('m2', 0.5), intent('m3', null)] });
    await store.journalAppend({ lease: root.lease, entries: [outcome('m1', i1!.seq, 0.125), ...Array.from({ length: 20 }, (_, i) => step(`x${i}`))] });
    const child = await startRun(store, { parentRunId: root.run.id, parentSeq: 0 });
    await store.journalAppend({ lease: child.lease, entries: [step('priced', { costUsd: 0.0625 }), intent('cm', 1)] });
    const grandchild = await startRun(store, { parentRunId: child.run.id, parentSeq: 0 });
    await store.journalAppend({ lease: grandchild.lease, entries: [step('deep', { costUsd: 2 })] });

    expect(await store.journalSpend({ runId: root.run.id, namespace: 'default', maxDepth: 32 }))
      .toEqual({ ownUsd: 0.125, childrenUsd: 2.0625, pricedCalls: 3, reservedUsd: 1.5 });
    expect(await store.journalSpend({ runId: root.run.id, namespace: 'default', maxDepth: 1 }))
      .toEqual({ ownUsd: 0.125, childrenUsd: 0.0625, pricedCalls: 2, reservedUsd: 1.5 });
    expect(await store.journalSpend({ runId: child.run.id, namespace: 'default', maxDepth: 0 }))
      .toEqual({ ownUsd: 0.0625, childrenUsd: 0, pricedCalls: 1, reservedUsd: 1 });
    // Any later entry pointing at the intent settles its reservation.
    await store.journalAppend({ lease: root.lease, entries: [newEntry({ kind: 'model', name: 'm2', status: 'cancelled', refSeq: i2!.seq })] });
    expect((await store.journalSpend({ runId: root.run.id, namespace: 'default', maxDepth: 0 })).reservedUsd).toBe(0);
  });

  it('a run with no priced entries spends 0; an unknown run or one of another namespace is RunNotFoundError', async () => {
    const { store } = h();
    const { run } = await startRun(store);
    expect(await store.journalSpend({ runId: run.id, namespace: 'default', maxDepth: 32 }))
      .toEqual({ ownUsd: 0, childrenUsd: 0, pricedCalls: 0, reservedUsd: 0 });
    await expect(store.journalSpend({ runId: run.id, namespace: 'other', maxDepth: 32 })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalSpend({ runId: '0190f5a1-0000-7000-8000-000000000000', namespace: 'default', maxDepth: 32 })).rejects.toBeInstanceOf(RunNotFoundError);
    await expect(store.journalSpend({ runId: 'not-a-run', namespace: 'default', maxDepth: 32 })).rejects.toBeInstanceOf(RunNotFoundError);
  });
}
