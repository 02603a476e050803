import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JournalFullError, LeaseLostError } from '../../src/journal/errors.js';
import { newEntry, type NewJournalEntry } from '../../src/journal/journal-entry.js';
import type { Lease } from '../../src/journal/run.js';
import { migrate } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/*
 * Group commit (append-batcher.ts): with one append in flight, appends of other runs that arrive
 * meanwhile go together in one statement, and each run is still fenced on its own: a stale lease or
 * a full journal fails that run's append alone, with the error a lone append would get.
 */

let db: TestDatabase;
let store: PostgresStore;
const statements: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  store = await PostgresStore.connect({ url: db.url, applicationName: 'batching', appendsInFlight: 1, limits: { journalEntries: 5 } });
  await migrate({ pool: store.pool });
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const name = (args[0] as { name?: string } | undefined)?.name;
    if (name) statements.push(name);
    return query(...args);
  };
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

async function leasedRun(): Promise<Lease> {
  const { lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
    leaseFor: { holder: 'batching', ttlMs: 30_000 },
  });
  return lease!;
}

const entries = (...names: string[]) => names.map((name) => newEntry({ kind: 'step', name, status: 'ok', payload: name }));

describe('appends batched across runs', () => {
  it('writes concurrent appends of many runs in one statement, each fenced on its own', async () => {
    const leases = await Promise.all(Array.from({ length: 6 }, () => leasedRun()));
    const [first, stale, full, ...rest] = leases as [Lease, Lease, Lease, ...Lease[]];
    await store.journalAppend({ lease: full, entries: entries('a', 'b', 'c', 'd') });
    statements.length = 0;
    const results = await Promise.allSettled([
      store.journalAppend({ lease: first, entries: entries('x') }),
      store.journalAppend({ lease: { ...stale, epoch: stale.epoch + 1 }, entries: entries('stale') }),
      store.journalAppend({ lease: full, entries: entries('e', 'f') }),
      ...rest.map((lease, i) => store.journalAppend({ lease, entries: entries(`r${i}`, `s${i}`) })),
    ]);
    expect(statements.filter((s) => s.startsWith('journal_append'))).toEqual(['journal_append_single', 'journal_append_many']);
    expect(results[0]).toMatchObject({ status: 'fulfilled', value: [{ runId: first.runId, name: 'x' }] });
    expect(results[1]).toMatchObject({ status: 'rejected' });
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(LeaseLostError);
    expect((results[2] as PromiseRejectedResult).reason).toBeInstanceOf(JournalFullError);
    for (const [i, lease] of rest.entries()) {
      const r = results[3 + i] as PromiseFulfilledResult<{ runId: string; name: string; seq: number }[]>;
      expect(r.value.map((e) => [e.runId, e.name])).toEqual([[lease.runId, `r${i}`], [lease.runId, `s${i}`]]);
      expect(r.value[1]!.seq).toBe(r.value[0]!.seq + 1);
      expect((await store.journalList({ runId: lease.runId })).map((e) => e.name)).toEqual(expect.arrayContaining([`r${i}`, `s${i}`]));
    }
    expect((await store.journalList({ runId: stale.runId })).map((e) => e.name)).not.toContain('stale');
    expect((await store.journalList({ runId: full.runId })).map((e) => e.name)).not.toContain('e');
  });
});

describe('what an append returns', () => {
  // Appends send the entries and get back only seq and created_at; the store builds the rest from
  // what it sent. Each statement's answer must be exactly what a later read of the journal gives.
  const full = (name: string, extra: Partial<NewJournalEntry> = {}) => newEntry({
    kind: 'model', name, status: 'ok', scope: 'agent/1', contentKey: `ck-${name}`, occurrence: 2,
    payload: { b: [1, 2.5, 'x', null], a: { nested: true } }, refSeq: 0, idempotencyKey: `idem-${name}`,
    usage: { inputTokens: 3, outputTokens: 4 }, costUsd: 0.00123, ...extra,
  });

  it('is what journalList reads back, for the single, multi-entry and batched statements', async () => {
    const [one, several, ...batched] = await Promise.all(Array.from({ length: 5 }, () => leasedRun())) as [Lease, Lease, ...Lease[]];
    await store.journalAppend({ lease: one, entries: [full('warm-up')] }); // seq 0, so the next is not
    statements.length = 0;
    const single = await store.journalAppend({ lease: one, entries: [full('single', { dedupeKey: 'sig-1' })] });
    const multi = await store.journalAppend({ lease: several, entries: [
      full('first'),
      newEntry({ kind: 'signal', name: 'go', status: 'suspended', payload: { deadlineAt: '2030-01-01T00:00:00.000Z' } }),
      full('third', { payload: null, error: { name: 'Oops', message: 'no', reason: 'test', details: { n: 1 } }, usage: null, costUsd: null }),
    ] });
    const slow = store.journalAppend({ lease: one, entries: [full('occupies-the-one-slot')] });
    const group = await Promise.all(batched.map((lease, i) => store.journalAppend({ lease, entries: [full(`b${i}`), full(`c${i}`, { refSeq: null })] })));
    await slow;
    expect(statements).toEqual(['journal_append_single', 'journal_append', 'journal_append_single', 'journal_append_many']);

    expect(single.map((e) => e.seq)).toEqual([1]);
    expect(multi.map((e) => e.seq)).toEqual([0, 1, 2]);
    for (const [lease, returned] of [[one, single], [several, multi], ...batched.map((l, i) => [l, group[i]!] as const)] as const) {
      const listed = await store.journalList({ runId: lease.runId, afterSeq: returned[0]!.seq - 1, limit: returned.length });
      expect(returned).toEqual(listed);
    }
    const { rows } = await store.pool.query('SELECT seq FROM suspension_deadlines WHERE run_id = $1', [several.runId]);
    expect(rows).toEqual([{ seq: 1 }]);
  });
});
