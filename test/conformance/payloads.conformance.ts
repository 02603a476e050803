import { createHash } from 'node:crypto';
import { expect, it } from 'vitest';
import { PayloadTooLargeError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { Json } from '../../src/journal/run.js';
import { resolution, startRun, step, suspension } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Large payloads (docs/journal.md "Large payloads", store/payload-refs.ts): an `ok` result or an
 * emitted event over limits.payloadInlineBytes is stored out of line; a `reference` read returns its
 * hash and size instead of it, an `inline` read (the default) returns it whole. Both stores draw
 * the same line at the same byte.
 */

/** A JSON string value whose JSON text is exactly `bytes` bytes (the quotes count). */
function textOf(bytes: number): string {
  return 'p'.repeat(bytes - 2);
}

const sha = (value: Json) => createHash('sha256').update(JSON.stringify(value), 'utf8').digest('hex');

export function payloadsSection({ factory }: SuiteContext): void {
  it('keeps a payload at the threshold inline and references one a byte over it, reading both back whole by default', async () => {
    const own = await factory({ limits: { payloadInlineBytes: 100 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      const at = textOf(100);
      const over = textOf(101);
      await store.journalAppend({ lease, entries: [step('at', { payload: at }), step('over', { payload: over })] });
      await store.journalAppend({ lease, entries: [step('alone', { payload: { big: textOf(200) } })] });

      const inline = await store.journalList({ runId: run.id });
      expect(inline.map((e) => e.payload)).toEqual([at, over, { big: textOf(200) }]);
      expect(inline.every((e) => e.payloadRef === undefined)).toBe(true);

      const refs = await store.journalList({ runId: run.id, payloads: 'reference' });
      expect(refs[0]).toMatchObject({ name: 'at', payload: at });
      expect(refs[0]!.payloadRef).toBeUndefined();
      expect(refs[1]).toMatchObject({ name: 'over', payload: null, payloadRef: { sha256: sha(over), sizeBytes: 101 } });
      const alone = JSON.stringify({ big: textOf(200) });
      expect(refs[2]).toMatchObject({ payload: null, payloadRef: { sha256: sha({ big: textOf(200) }), sizeBytes: alone.length } });
      // Pages of either kind agree on everything but the payload.
      const page = await store.journalList({ runId: run.id, afterSeq: 0, limit: 1, payloads: 'reference' });
      expect(page.map((e) => [e.seq, e.payloadRef?.sizeBytes])).toEqual([[1, 101]]);
    } finally {
      await own.close();
    }
  });

  it('keeps waits, resolutions, intents and status entries inline whatever their size, and references emitted events', async () => {
    const own = await factory({ limits: { payloadInlineBytes: 100 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      const big = { text: textOf(300) };
      await store.journalAppend({ lease, entries: [
        suspension('wait', { payload: big }),
        newEntry({ kind: 'tool', name: 'call', status: 'running', payload: big }),
        newEntry({ kind: 'emit', name: 'progress', status: 'info', payload: big }),
      ] });
      await store.journalResolve({ runId: run.id, suspensionSeq: 0, entry: resolution(big) });
      await store.runStatusSet({ lease, status: 'SUCCEEDED', output: big });
      const refs = await store.journalList({ runId: run.id, payloads: 'reference' });
      expect(refs.map((e) => [e.status, e.payloadRef === undefined])).toEqual([
        ['suspended', true], ['running', true], ['info', false], ['resolved', true], ['info', true],
      ]);
      expect(refs[2]!.payload).toBeNull();
      expect((await store.journalWaits({ runId: run.id, namespace: 'default' }))[0]!.entry.payload).toEqual(big);
      expect((await store.journalList({ runId: run.id }))[2]!.payload).toEqual(big);
    } finally {
      await own.close();
    }
  });

  it('addresses the same payload by the same hash, across appends and within one', async () => {
    const own = await factory({ limits: { payloadInlineBytes: 100 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      const big = { rows: Array.from({ length: 20 }, (_, i) => ({ i, v: 'x'.repeat(10) })) };
      await store.journalAppend({ lease, entries: [step('a', { payload: big }), step('b', { payload: big })] });
      await store.journalAppend({ lease, entries: [step('c', { payload: big }), step('d', { payload: { ...big, other: 1 } })] });
      const refs = await store.journalList({ runId: run.id, payloads: 'reference' });
      expect(new Set(refs.slice(0, 3).map((e) => e.payloadRef?.sha256))).toEqual(new Set([sha(big)]));
      expect(refs[3]!.payloadRef?.sha256).toBe(sha({ ...big, other: 1 }));
      expect((await store.journalList({ runId: run.id })).map((e) => e.payload)).toEqual([big, big, big, { ...big, other: 1 }]);
    } finally {
      await own.close();
    }
  });

  it('refuses a payload over limits.payloadBytes however it would be stored, writing nothing', async () => {
    const own = await factory({ limits: { payloadInlineBytes: 100, payloadBytes: 1_000 } });
    try {
      const { store } = own;
      const { run, lease } = await startRun(store);
      await store.journalAppend({ lease, entries: [step('fits', { payload: textOf(1_000) })] });
      const refused = store.journalAppend({ lease, entries: [step('big', { payload: textOf(500) }), step('too big', { payload: textOf(1_001) })] });
      await expect(refused).rejects.toBeInstanceOf(PayloadTooLargeError);
      await expect(refused).rejects.toMatchObject({ field: 'entries[1].payload', sizeBytes: 1_001, limitBytes: 1_000 });
      expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['fits']);
      expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(1);
    } finally {
      await own.close();
    }
  });

  it("stores a created run's first entries' large payloads the same way (a fork's prefix)", async () => {
    const own = await factory({ limits: { payloadInlineBytes: 100 } });
    try {
      const { store } = own;
      const big = textOf(500);
      const { run } = await startRun(store, { journal: [step('kept', { payload: big }), step('small', { payload: 1 })] });
      const refs = await store.journalList({ runId: run.id, payloads: 'reference' });
      expect(refs.map((e) => e.payloadRef?.sizeBytes ?? null)).toEqual([500, null]);
      expect((await store.journalList({ runId: run.id })).map((e) => e.payload)).toEqual([big, 1]);
    } finally {
      await own.close();
    }
  });
}
