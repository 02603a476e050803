import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { LeaseLostError, RunNotFoundError, StoreUnavailableError } from '../../src/journal/errors.js';
import { translatePgError } from '../../src/store/postgres/pg-errors.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/* Pool discipline (reliability.md §2.9-2.10) and the one place pg errors become domain errors. */

let db: MigratedDatabase;

beforeAll(async () => {
  db = await createMigratedDatabase();
});

afterAll(async () => {
  await db?.drop();
});

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

it('a database that refuses connections is StoreUnavailableError (retryable)', async () => {
  const url = new URL(db.url);
  url.port = String(await closedPort());
  const connecting = PostgresStore.connect({ url: url.toString(), connectionTimeoutMs: 1_000 });
  await expect(connecting).rejects.toBeInstanceOf(StoreUnavailableError);
  await expect(connecting).rejects.toMatchObject({ retryable: true });
});

it('a database that does not accept connections (SQLSTATE 55000) is StoreUnavailableError; a 55000 in a session stays a bug', async () => {
  // As for maintenance: the database refuses new sessions (the current one cannot say so of itself).
  const name = new URL(db.url).pathname.slice(1);
  const maintenance = new pg.Client({ connectionString: inject('databaseUrl') });
  await maintenance.connect();
  await maintenance.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
  try {
    const connecting = PostgresStore.connect({ url: db.url, connectionTimeoutMs: 2_000 });
    await expect(connecting).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(connecting).rejects.toMatchObject({ retryable: true, message: expect.stringContaining('SQLSTATE 55000') });
  } finally {
    await maintenance.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
    await maintenance.end();
  }
  // currval before nextval is 55000 too, from a statement: a bug, rethrown as it is.
  const bug = await db.admin.query("CREATE TEMP SEQUENCE s; SELECT currval('s')").catch((e: unknown) => e);
  expect((bug as { code?: string }).code).toBe('55000');
  expect(translatePgError(bug)).toBe(bug);
});

it('an exhausted pool fails after connectionTimeoutMs instead of waiting forever', async () => {
  const store = await PostgresStore.connect({ url: db.url, poolSize: 1, connectionTimeoutMs: 200 });
  const held = await store.pool.connect();
  try {
    const started = performance.now();
    await expect(store.runGet({ runId: '018f0000-0000-7000-8000-000000000000', namespace: 'x' }))
      .rejects.toBeInstanceOf(StoreUnavailableError);
    expect(performance.now() - started).toBeLessThan(5_000);
    // Renewals live on their own pool, so a starved main pool does not starve them.
    const lease = { runId: '018f0000-0000-7000-8000-000000000000', holder: 'h', epoch: 1, expiresAt: new Date() };
    await expect(store.runLeaseRenew({ lease, ttlMs: 1_000 })).rejects.toBeInstanceOf(RunNotFoundError);
  } finally {
    held.release();
    await store.close();
  }
});

it('every session carries statement_timeout and idle_in_transaction_session_timeout', async () => {
  const store = await PostgresStore.connect({ url: db.url, statementTimeoutMs: 250, idleInTransactionTimeoutMs: 4_321 });
  try {
    for (const pool of [store.pool, store.leasePool]) {
      const { rows } = await pool.query(`SELECT current_setting('statement_timeout') AS st,
        current_setting('idle_in_transaction_session_timeout') AS idle`);
      expect(rows[0]).toEqual({ st: '250ms', idle: '4321ms' });
    }
    const timedOut = await store.pool.query('SELECT pg_sleep(5)').catch((err: unknown) => err);
    expect(translatePgError(timedOut)).toBeInstanceOf(StoreUnavailableError);
  } finally {
    await store.close();
  }
});

it('a stalled transaction is ended by idle_in_transaction_session_timeout, releasing the run row', async () => {
  const store = await PostgresStore.connect({ url: db.url, idleInTransactionTimeoutMs: 300 });
  const { run, lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
    leaseFor: { holder: 'a', ttlMs: 60_000 },
  });
  const stalled = await store.pool.connect();
  const died = new Promise((resolve) => stalled.on('error', resolve)); // pg emits it more than once
  try {
    await stalled.query('BEGIN');
    await stalled.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [run.id]);
    // The force waits on the row lock until the server kills the idle transaction.
    const forced = await store.runStatusForce({ runId: run.id, status: 'CANCELLED' });
    expect(forced?.run.status).toBe('CANCELLED');
    expect(translatePgError(await died)).toBeInstanceOf(StoreUnavailableError);
    await expect(store.journalAppend({ lease: lease!, entries: [] })).rejects.toBeInstanceOf(LeaseLostError);
  } finally {
    stalled.release(true);
    await store.close();
  }
});
