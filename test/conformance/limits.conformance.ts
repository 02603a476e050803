import { expect, it } from 'vitest';
import { JournalFullError, PayloadTooLargeError } from '../../src/journal/errors.js';
import { resolution, runParams, startRun, step, suspension } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function limitsSection({ factory }: SuiteContext): void {
  it('refuses payloads over limits.payloadBytes, naming the field and the limit, and writes nothing', async () => {
    const own = await factory({ limits: { payloadBytes: 1_000 } });
    try {
      const { store } = own;
      const big = { blob: 'x'.repeat(1_000) };
      const create = store.runCreate(runParams({ input: big, idempotencyKey: 'big' }));
      await expect(create).rejects.toBeInstanceOf(PayloadTooLargeError);
      await expect(create).rejects.toMatchObject({ field: 'input', limitBytes: 1_000, sizeBytes: JSON.stringify(big).length });
      expect((await store.runList({ namespace: 'default', pageSize: 10 })).runs).toEqual([]);

      const { run, lease } = await startRun(store);
      await store.journalAppend({ lease, entries: [suspension('wait')] });
      await expect(store.journalAppend({ lease, entries: [step('ok'), step('too big', { payload: big })] }))
        .rejects.toMatchObject({ field: 'entries[1].payload', limitBytes: 1_000 });
      await expect(store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution(big) }))
        .rejects.toMatchObject({ field: 'entry.payload' });
      await expect(store.runStatusSet({ lease, status: 'SUCCEEDED', output: big })).rejects.toMatchObject({ field: 'output' });
      await expect(store.runStatusForce({ runId: run.id, status: 'FAILED', error: { name: 'E', message: 'm', details: big } }))
        .rejects.toMatchObject({ field: 'error' });
      expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['wait']);
      expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ status: 'RUNNING', nextSeq: 1, output: null });
      // Just under the limit is fine.
      await store.journalAppend({ lease, entries: [step('fits', { payload: 'y'.repeat(990) })] });
    } finally {
      await own.close();
    }
  });

  it('refuses appends past limits.journalEntries with JournalFullError, but still lets the run end', async () => {
    const own = await factory({ limits: { journalEntries: 5 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      await store.journalAppend({ lease, entries: [step('a'), step('b'), step('c')] });
      await store.journalAppend({ lease, entries: [suspension('d')] });
      const full = store.journalAppend({ lease, entries: [step('e'), step('f')] });
      await expect(full).rejects.toBeInstanceOf(JournalFullError);
      await expect(full).rejects.toMatchObject({ runId: run.id, limitEntries: 5 });
      expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(4);
      await store.journalResolve({ runId: run.id, suspensionSeq: 3, entry: resolution(1) });
      await expect(store.journalResolve({ runId: run.id, suspensionSeq: 3, entry: resolution(2) })).rejects.toBeInstanceOf(JournalFullError);
      const { run: failed } = await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'JournalFullError', message: 'full' } });
      expect(failed).toMatchObject({ status: 'FAILED', nextSeq: 6 });
    } finally {
      await own.close();
    }
  });

  it('refuses an append past limits.journalBytes whole with JournalFullError naming the byte limit; counts the bytes; lets the run end', async () => {
    const own = await factory({ limits: { journalBytes: 1_000 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      const blob = (n: number) => 'x'.repeat(n - 2); // a JSON string of n bytes
      await store.journalAppend({ lease, entries: [step('a', { payload: blob(300) }), step('b', { payload: blob(300) })] });
      expect((await store.runGet({ runId: run.id, namespace: 'default' })).journalBytes).toBe(600);
      await store.journalAppend({ lease, entries: [step('c', { payload: blob(350) })] });
      const full = store.journalAppend({ lease, entries: [step('d', { payload: blob(10) }), step('e', { payload: blob(50) })] });
      await expect(full).rejects.toBeInstanceOf(JournalFullError);
      await expect(full).rejects.toMatchObject({ runId: run.id, limitBytes: 1_000 });
      // Nothing of the refused append was written; what still fits does.
      expect(await store.runGet({ runId: run.id, namespace: 'default' })).toMatchObject({ nextSeq: 3, journalBytes: 950 });
      await store.journalAppend({ lease, entries: [step('f', { payload: blob(50) })] });
      expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['a', 'b', 'c', 'f']);
      await expect(store.journalAppend({ lease, entries: [step('g', { payload: 1 })] })).rejects.toMatchObject({ limitBytes: 1_000 });
      const { run: failed } = await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'JournalFullError', message: 'full' } });
      expect(failed).toMatchObject({ status: 'FAILED', nextSeq: 5, journalBytes: 1_000 });
    } finally {
      await own.close();
    }
  });
}
