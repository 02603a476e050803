import type pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError, PayloadTooLargeError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * What the conformance suite cannot see of large payloads on PostgreSQL (migration 0022,
 * docs/journal.md "Large payloads"): where the bytes are. A payload over the inline threshold lives
 * once per run in `payloads`, the journal row holds its hash and size only, a refused or fenced
 * append leaves no payload row behind, and retention takes the rows with their run.
 */

const MiB = 1024 * 1024;
let db: MigratedDatabase;
let admin: pg.Pool;
let store: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
  store = await PostgresStore.connect({ url: db.url, limits: { payloadBytes: 16 * MiB }, applicationName: 'payloads' });
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

beforeEach(async () => {
  await admin.query('TRUNCATE runs, journal, payloads, suspension_deadlines CASCADE');
});

/** A 5 MiB result unlike any other `i` makes (its JSON text is 5 MiB plus the braces and key). */
const big = (i: number) => ({ blob: `${i}:`.padEnd(5 * MiB, String.fromCharCode(97 + (i % 26))) });
const step = (name: string, payload: unknown) => newEntry({ kind: 'step', name, status: 'ok', contentKey: `ck:${name}`, payload: payload as never });

async function started() {
  const { run, lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null, leaseFor: { holder: 'worker-a', ttlMs: 30_000 },
  });
  return { run, lease: lease! };
}

async function payloadRows(runId: string): Promise<{ rows: number; bytes: number }> {
  const { rows } = await admin.query<{ rows: number; bytes: string }>(
    'SELECT count(*)::int AS rows, COALESCE(sum(size_bytes), 0)::text AS bytes FROM payloads WHERE run_id = $1', [runId]);
  return { rows: rows[0]!.rows, bytes: Number(rows[0]!.bytes) };
}

describe('large payloads on PostgreSQL', () => {
  it('stores ten 5 MiB results out of the journal rows, pages them by reference and reads them back whole', async () => {
    const { run, lease } = await started();
    for (let i = 0; i < 10; i++) await store.journalAppend({ lease, entries: [step(`s${i}`, big(i)), step(`small${i}`, { i })] });
    expect(await payloadRows(run.id)).toEqual({ rows: 10, bytes: 10 * JSON.stringify(big(0)).length });
    // The journal's own rows stay small: the payload column of an out-of-line entry is NULL.
    const { rows } = await admin.query<{ bytes: number; refs: number }>(
      `SELECT COALESCE(sum(pg_column_size(j.*)), 0)::int AS bytes, count(payload_sha256)::int AS refs FROM journal j WHERE run_id = $1`, [run.id]);
    expect(rows[0]!.refs).toBe(10);
    expect(rows[0]!.bytes).toBeLessThan(20 * 1024);

    const page = await store.journalList({ runId: run.id, limit: 20, payloads: 'reference' });
    expect(page).toHaveLength(20);
    expect(Buffer.byteLength(JSON.stringify(page))).toBeLessThan(16 * 1024);
    expect(page[0]).toMatchObject({ payload: null, payloadRef: { sizeBytes: JSON.stringify(big(0)).length } });
    expect(page[1]).toMatchObject({ payload: { i: 0 } });

    const whole = await store.journalList({ runId: run.id });
    for (let i = 0; i < 10; i++) {
      expect(whole[2 * i]!.payload).toEqual(big(i));
      expect(whole[2 * i]!.payloadRef).toBeUndefined();
    }
  });

  it('stores a payload the run journals again once', async () => {
    const { run, lease } = await started();
    await store.journalAppend({ lease, entries: [step('a', big(1)), step('b', big(1))] });
    await store.journalAppend({ lease, entries: [step('c', big(1))] });
    expect(await payloadRows(run.id)).toEqual({ rows: 1, bytes: JSON.stringify(big(1)).length });
    expect((await store.journalList({ runId: run.id })).map((e) => e.payload)).toEqual([big(1), big(1), big(1)]);
    // Another run's copy is its own (a purge of one never takes the other's).
    const other = await started();
    await store.journalAppend({ lease: other.lease, entries: [step('a', big(1))] });
    expect((await payloadRows(other.run.id)).rows).toBe(1);
  });

  it('leaves no payload row behind when an append is refused over the hard limit or fenced', async () => {
    const { run, lease } = await started();
    const refused = store.journalAppend({ lease, entries: [step('ok', big(2)), step('huge', { blob: 'h'.repeat(16 * MiB) })] });
    await expect(refused).rejects.toBeInstanceOf(PayloadTooLargeError);
    await expect(refused).rejects.toMatchObject({ field: 'entries[1].payload', limitBytes: 16 * MiB });
    expect(await payloadRows(run.id)).toEqual({ rows: 0, bytes: 0 });

    await store.runLeaseRelease({ lease });
    await expect(store.journalAppend({ lease, entries: [step('late', big(3))] })).rejects.toBeInstanceOf(LeaseLostError);
    expect(await payloadRows(run.id)).toEqual({ rows: 0, bytes: 0 });
    expect((await store.journalList({ runId: run.id })).filter((e) => e.kind === 'step')).toEqual([]);
  });

  it('retention deletes the payload rows of the runs it purges and nothing else', async () => {
    const done = await started();
    await store.journalAppend({ lease: done.lease, entries: [step('a', big(4))] });
    await store.runStatusSet({ lease: done.lease, status: 'SUCCEEDED', output: { ok: true } });
    const parked = await started();
    await store.journalAppend({ lease: parked.lease, entries: [step('a', big(4)), newEntry({ kind: 'signal', name: 'go', status: 'suspended' })] });
    await store.runStatusSet({ lease: parked.lease, status: 'SUSPENDED' });
    await admin.query(`UPDATE runs SET updated_at = updated_at - interval '40 days'`);

    const purged = await store.runPurge({ olderThanMs: 30 * 86_400_000, limit: 10 });
    expect(purged.runIds).toEqual([done.run.id]);
    expect((await payloadRows(done.run.id)).rows).toBe(0);
    expect((await payloadRows(parked.run.id)).rows).toBe(1);
    expect((await admin.query('SELECT 1 FROM payloads')).rowCount).toBe(1);
  });
});
