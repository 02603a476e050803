import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaseLostError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { Lease } from '../../src/journal/run.js';
import * as jq from '../../src/store/postgres/journal-queries.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import * as rq from '../../src/store/postgres/runs-queries.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * DESIGN "Leases and fencing", proven on real connections driven one statement at a time with
 * explicit transactions: `stale` is the old lease holder, `owner` the process taking the lease
 * over. The property: no entry written under a stale epoch exists that the new owner did not see
 * when it read the journal after its takeover committed. The store's own statements are used
 * (journal-queries / runs-queries); the naive EXISTS guard lives only here, as the negative control.
 */

const TTL = 30_000;
let db: MigratedDatabase;
let admin: pg.Pool;
let store: PostgresStore;
let stale: pg.Client;
let owner: pg.Client;
let stalePid = 0;
let ownerPid = 0;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
  store = await PostgresStore.connect({ url: db.url, applicationName: 'fencing' });
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

beforeEach(async () => {
  stale = new pg.Client({ connectionString: db.url });
  owner = new pg.Client({ connectionString: db.url });
  await Promise.all([stale.connect(), owner.connect()]);
  // Known up front: a client busy with a blocked statement cannot answer another query.
  [stalePid, ownerPid] = await Promise.all([pidOf(stale), pidOf(owner)]);
});

afterEach(async () => {
  await Promise.all([stale.end(), owner.end()]);
});

/** A RUNNING run whose lease (epoch 1, held by `stale`) has expired, so a takeover may happen. */
async function expiredRun(): Promise<Lease> {
  const { lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
    leaseFor: { holder: 'stale', ttlMs: TTL },
  });
  await expire(lease!.runId);
  return lease!;
}

async function expire(runId: string): Promise<void> {
  await admin.query(`UPDATE runs SET lease_expires_at = clock_timestamp() - interval '1 second' WHERE id = $1`, [runId]);
}

function appendQuery(lease: Lease, name: string): pg.QueryConfig {
  return jq.journalAppend({ runId: lease.runId, epoch: lease.epoch, entries: [newEntry({ kind: 'step', name, status: 'ok' })], deadlines: [null], maxEntries: 100_000, bytes: 0, maxBytes: 1_000_000 });
}

function takeoverQuery(runId: string): pg.QueryConfig {
  return rq.runLeaseAcquire({ runId, holder: 'owner', ttlMs: TTL, statuses: ['RUNNING'], namespace: null });
}

/** The naive guard DESIGN warns about: checks the epoch with a non-locking EXISTS. */
function naiveAppendQuery(lease: Lease, name: string): pg.QueryConfig {
  return {
    text: `INSERT INTO journal (run_id, seq, scope, kind, name, content_key, occurrence, status)
      SELECT $1, (SELECT coalesce(max(seq) + 1, 0) FROM journal WHERE run_id = $1), '', 'step', $3, '', 0, 'ok'
      WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1 AND lease_epoch = $2)`,
    values: [lease.runId, lease.epoch, name],
  };
}

async function pidOf(client: pg.Client): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
}

/**
 * Resolves 'blocked' once `pid` waits on a lock, or 'done' if `pending` finishes first. It watches
 * pg_stat_activity for the wait (an observable state), rather than sleeping and hoping.
 */
async function blockedOrDone(pid: number, pending: Promise<unknown>): Promise<'blocked' | 'done'> {
  let done = false;
  void pending.then(() => { done = true; }, () => { done = true; });
  for (let i = 0; i < 2_000; i++) {
    if (done) return 'done';
    const { rows } = await admin.query<{ waiting: boolean }>(
      `SELECT wait_event_type = 'Lock' AS waiting FROM pg_stat_activity WHERE pid = $1`, [pid]);
    if (rows[0]?.waiting) return 'blocked';
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`backend ${pid} neither blocked nor finished`);
}

async function journalNames(runId: string): Promise<string[]> {
  return (await admin.query<{ name: string }>('SELECT name FROM journal WHERE run_id = $1 ORDER BY seq', [runId])).rows.map((r) => r.name);
}

/**
 * The interleaving of reliability.md T1: the stale holder writes inside an open transaction, the
 * owner takes the lease over and reads the journal, then the stale transaction commits. Returns
 * what the owner saw and what the journal holds at the end.
 */
async function staleWriteDuringTakeover(guard: 'fence' | 'naive') {
  const lease = await expiredRun();
  await stale.query('BEGIN');
  const wrote = await stale.query(guard === 'fence' ? appendQuery(lease, 'stale') : naiveAppendQuery(lease, 'stale'));
  expect(wrote.rowCount).toBe(1); // the stale write got in before the takeover started
  const takeover = owner.query(takeoverQuery(lease.runId));
  const state = await blockedOrDone(ownerPid, takeover);
  let seenByOwner: string[];
  if (state === 'blocked') {
    await stale.query('COMMIT'); // the takeover waits for the stale writer ...
    expect((await takeover).rowCount).toBe(1);
    seenByOwner = (await owner.query(jq.journalList({ runId: lease.runId, afterSeq: -1, limit: null, namespace: null }))).rows.map((r) => r.name);
  } else {
    expect((await takeover).rowCount).toBe(1); // ... or it does not, and reads before the stale commit
    seenByOwner = (await owner.query(jq.journalList({ runId: lease.runId, afterSeq: -1, limit: null, namespace: null }))).rows.map((r) => r.name);
    await stale.query('COMMIT');
  }
  const final = await journalNames(lease.runId);
  return { state, seenByOwner, unseen: final.filter((n) => !seenByOwner.includes(n)) };
}

describe('fencing on the run row (UPDATE ... WHERE lease_epoch = $2 in the append statement)', () => {
  it('(a) a stale writer blocked behind an in-flight epoch bump is rejected once the bump commits', async () => {
    const lease = await expiredRun();
    await owner.query('BEGIN');
    expect((await owner.query(takeoverQuery(lease.runId))).rowCount).toBe(1); // bumped, not committed
    const write = stale.query(appendQuery(lease, 'stale'));
    expect(await blockedOrDone(stalePid, write)).toBe('blocked');
    await owner.query('COMMIT');
    // READ COMMITTED re-evaluates the WHERE on the new row version: epoch 2 <> 1, zero rows.
    expect((await write).rowCount).toBe(0);
    expect(await journalNames(lease.runId)).toEqual([]);
    await expect(store.journalAppend({ lease, entries: [newEntry({ kind: 'step', name: 'again', status: 'ok' })] }))
      .rejects.toBeInstanceOf(LeaseLostError);
    expect(await journalNames(lease.runId)).toEqual([]);
  });

  it('(b) a stale write committed just before the takeover is visible to the new owner (the takeover waits)', async () => {
    const { state, seenByOwner, unseen } = await staleWriteDuringTakeover('fence');
    expect(state).toBe('blocked');
    expect(seenByOwner).toEqual(['stale']);
    expect(unseen).toEqual([]);
  });

  it('(c) a writer whose lease expired mid-transaction and was taken over is rejected', async () => {
    const { lease } = await store.runCreate({
      namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
      leaseFor: { holder: 'stale', ttlMs: TTL },
    });
    await stale.query('BEGIN');
    await stale.query(appendQuery(lease!, 'while valid')); // holds the row lock ...
    await stale.query('COMMIT');
    await stale.query('BEGIN');
    await stale.query(jq.journalList({ runId: lease!.runId, afterSeq: -1, limit: null, namespace: null })); // ... reads, then stalls
    await expire(lease!.runId);
    const taken = await owner.query(takeoverQuery(lease!.runId));
    expect(taken.rows[0]).toMatchObject({ lease_holder: 'owner' });
    const seenByOwner = (await owner.query(jq.journalList({ runId: lease!.runId, afterSeq: -1, limit: null, namespace: null }))).rows.map((r) => r.name);
    expect((await stale.query(appendQuery(lease!, 'after expiry'))).rowCount).toBe(0);
    await stale.query('COMMIT');
    expect(seenByOwner).toEqual(['while valid']);
    expect(await journalNames(lease!.runId)).toEqual(['while valid']);
  });

  it('accepts zero stale entries over many takeovers racing a stale appender', async () => {
    const lease = await expiredRun();
    const fresh = await store.runLeaseAcquire({ runId: lease.runId, holder: 'owner', ttlMs: TTL, statuses: ['RUNNING'] });
    const results = await Promise.allSettled(Array.from({ length: 50 }, (_, i) =>
      store.journalAppend({ lease, entries: [newEntry({ kind: 'step', name: `stale-${i}`, status: 'ok' })] })));
    expect(results.every((r) => r.status === 'rejected' && r.reason instanceof LeaseLostError)).toBe(true);
    await store.journalAppend({ lease: fresh!, entries: [newEntry({ kind: 'step', name: 'owner', status: 'ok' })] });
    expect(await journalNames(lease.runId)).toEqual(['owner']);
  });
});

describe('negative control: the naive INSERT ... WHERE EXISTS (epoch) guard', () => {
  it('lets a stale write land after the new owner read the journal (so the property above can fail)', async () => {
    const { state, seenByOwner, unseen } = await staleWriteDuringTakeover('naive');
    expect(state).toBe('done'); // nothing made the takeover wait
    expect(seenByOwner).toEqual([]);
    expect(unseen).toEqual(['stale']); // STALE WRITE LANDED AFTER TAKEOVER
  });
});
