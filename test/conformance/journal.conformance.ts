import { expect, it } from 'vitest';
import { RunNotFoundError, RunStateError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { Json } from '../../src/journal/run.js';
import { startRun, step } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

export function journalSection({ h }: SuiteContext): void {
  it('sums each run\'s own costUsd for a page of runs; unknown ids and other namespaces are left out', async () => {
    const { store } = h();
    const { run: a, lease: la } = await startRun(store);
    const { run: b } = await startRun(store);
    const { run: other, lease: lo } = await startRun(store, { namespace: 'elsewhere' });
    await store.journalAppend({ lease: la, entries: [step('x', { costUsd: 0.25 }), step('y'), step('z', { costUsd: 0.5 })] });
    await store.journalAppend({ lease: lo, entries: [step('x', { costUsd: 1 })] });
    const unknown = '018f0000-0000-7000-8000-000000000000';
    const totals = await store.journalCostTotals({ namespace: 'default', runIds: [a.id, b.id, other.id, unknown, 'not-a-run-id'] });
    expect([...totals.entries()].sort()).toEqual([[a.id, 0.75], [b.id, 0]].sort());
    expect((await store.journalCostTotals({ runIds: [other.id] })).get(other.id)).toBe(1);
    expect((await store.journalCostTotals({ runIds: [] })).size).toBe(0);
  });

  it('appends at dense seqs from 0, a batch at consecutive seqs, and lists after a cursor', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const one = await store.journalAppend({ lease, entries: [step('a')] });
    const batch = await store.journalAppend({ lease, entries: [step('b'), step('c'), step('d')] });
    expect(one.map((e) => e.seq)).toEqual([0]);
    expect(batch.map((e) => [e.seq, e.name])).toEqual([[1, 'b'], [2, 'c'], [3, 'd']]);
    expect((await store.journalList({ runId: run.id })).map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    expect((await store.journalList({ runId: run.id, afterSeq: 1 })).map((e) => e.name)).toEqual(['c', 'd']);
    expect((await store.journalList({ runId: run.id, afterSeq: 0, limit: 2 })).map((e) => e.name)).toEqual(['b', 'c']);
    expect((await store.journalList({ runId: run.id, afterSeq: 3 }))).toEqual([]);
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).nextSeq).toBe(4);
  });

  it('keeps seqs dense and each batch contiguous under concurrent appenders on one lease', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      store.journalAppend({ lease, entries: Array.from({ length: (i % 3) + 1 }, (_, j) => step(`c${i}-${j}`)) })));
    for (const written of results) {
      const seqs = written.map((e) => e.seq);
      expect(seqs).toEqual(seqs.map((_, j) => seqs[0]! + j));
    }
    const all = await store.journalList({ runId: run.id });
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i));
    expect(all).toHaveLength(60);
    expect(new Set(all.map((e) => e.name)).size).toBe(60);
  });

  it('records two-phase entries: a running intent, then a terminal entry whose refSeq points at it', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const [intent] = await store.journalAppend({ lease, entries: [newEntry({
      kind: 'tool', name: 'charge_back', status: 'running', scope: 'par:3:1', contentKey: 'ck:1', occurrence: 2,
      payload: { args: { order: 'o-1', amount: 12.5 } }, idempotencyKey: `${run.id}:par:3:1:ck:1:2`,
    })] });
    const [done] = await store.journalAppend({ lease, entries: [newEntry({
      kind: 'tool', name: 'charge_back', status: 'ok', scope: 'par:3:1', contentKey: 'ck:1', occurrence: 2,
      refSeq: intent!.seq, payload: { refunded: true, nested: [1, 'two', null, { x: false }] },
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 }, costUsd: 0.0125,
    })] });
    const [failed] = await store.journalAppend({ lease, entries: [newEntry({
      kind: 'model', name: 'gpt', status: 'error', error: { name: 'RateLimited', message: 'slow down', reason: 'rate_limited', details: { retryAfter: 3 } },
    })] });
    const listed = await store.journalList({ runId: run.id });
    expect(listed).toEqual([intent, done, failed]);
    expect(listed[1]).toMatchObject({
      runId: run.id, seq: 1, refSeq: 0, status: 'ok', scope: 'par:3:1', occurrence: 2, costUsd: 0.0125,
      usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 }, dedupeKey: null, error: null,
    });
    expect(listed[0]!.idempotencyKey).toBe(`${run.id}:par:3:1:ck:1:2`);
    expect(listed[0]!.createdAt).toBeInstanceOf(Date);
    expect(listed[2]!.error).toEqual({ name: 'RateLimited', message: 'slow down', reason: 'rate_limited', details: { retryAfter: 3 } });
  });

  it('stores JSON exactly: scalars, unicode, nulls, and values a caller mutates afterwards', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    const payloads: Json[] = [0, -1.5, true, 'text', 'ünïcødé ✓ "quoted" \\', null, [], {}, { a: { b: [{ c: 'd' }] } }];
    const mutable = { list: [1, 2] };
    await store.journalAppend({ lease, entries: [...payloads.map((p, i) => step(`p${i}`, { payload: p })), step('m', { payload: mutable })] });
    mutable.list.push(3);
    const listed = await store.journalList({ runId: run.id });
    expect(listed.map((e) => e.payload)).toEqual([...payloads, { list: [1, 2] }]);
  });

  it('journals a status change through runStatusSet and keeps output only for terminal statuses', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a')] });
    const done = await store.runStatusSet({ lease, status: 'SUCCEEDED', output: { refunded: 12.5 } });
    expect(done.run).toMatchObject({ status: 'SUCCEEDED', output: { refunded: 12.5 }, error: null, leaseHolder: null, leaseExpiresAt: null, nextSeq: 2 });
    expect(done.entry).toMatchObject({ seq: 1, kind: 'status', name: 'SUCCEEDED', status: 'info', payload: { status: 'SUCCEEDED', output: { refunded: 12.5 } } });
    expect(await store.journalList({ runId: run.id, afterSeq: 0 })).toEqual([done.entry]);
    expect(await store.runGet({ runId: run.id, namespace: 'default' })).toEqual(done.run);
  });

  it('rejects a fenced write on an unknown run as not found', async () => {
    const { store } = h();
    const lease = { runId: '018f0000-0000-7000-8000-000000000000', holder: 'w', epoch: 1, expiresAt: new Date() };
    await expect(store.journalAppend({ lease, entries: [step('a')] })).rejects.toBeInstanceOf(RunNotFoundError);
  });

  it('refuses an append whose dedupeKey the journal already holds, writing nothing of the batch', async () => {
    const { store } = h();
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('a', { dedupeKey: 'k' })] });
    await expect(store.journalAppend({ lease, entries: [step('b'), step('c', { dedupeKey: 'k' })] }))
      .rejects.toBeInstanceOf(RunStateError);
    expect((await store.journalList({ runId: run.id })).map((e) => e.name)).toEqual(['a']);
    expect((await store.journalAppend({ lease, entries: [step('d')] }))[0]!.seq).toBe(1);
  });
}
