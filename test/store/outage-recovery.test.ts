import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { INTERRUPTED_RECOVERY } from '../../src/sweeper/sweeper.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * docs/recovery.md "Database outages": a lease that expired while PostgreSQL was down (or before it
 * had been up for the grace period) could not have been renewed, so recovering it does not count
 * towards maxRecoveries; a lease that expired with the database up for longer does. Restarting the
 * database itself is what test/chaos/postgres-restart.test.ts does; here the two expiries are set
 * relative to pg_postmaster_start_time() on the shared test database.
 */

const MAX = 3;
let db: MigratedDatabase;
let store: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase();
  store = await PostgresStore.connect({ url: db.url, applicationName: 'outage-recovery' });
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

/** A RUNNING run that already used every recovery, its lease expired at `expiredAt` (SQL). */
async function exhaustedRun(expiredAt: string): Promise<string> {
  const { lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
    leaseFor: { holder: 'cut-off', ttlMs: 30_000 },
  });
  await db.admin.query(`UPDATE runs SET recovery_count = $2, lease_expires_at = ${expiredAt}, created_at = now() - interval '1 hour' WHERE id = $1`,
    [lease!.runId, MAX]);
  return lease!.runId;
}

async function rowOf(id: string): Promise<{ status: string; recovery_count: number }> {
  return (await db.admin.query<{ status: string; recovery_count: number }>('SELECT status, recovery_count FROM runs WHERE id = $1', [id])).rows[0]!;
}

describe('recovering leases cut off by a database outage', () => {
  it('without outageGraceMs every recovery counts (the store\'s callers other than the sweeper)', async () => {
    const cutOff = await exhaustedRun(`pg_postmaster_start_time() - interval '1 second'`);
    const r = await store.runRecoverExpired({ limit: 100, maxRecoveries: MAX, graceMs: 0, failError: INTERRUPTED_RECOVERY });
    expect(r.failed).toEqual([cutOff]);
  });

  it('does not count a lease that expired before the database had been up for the grace period', async () => {
    const graceMs = 60_000;
    const cutOff = await exhaustedRun(`pg_postmaster_start_time() - interval '1 second'`);
    const justAfterStart = await exhaustedRun(`LEAST(pg_postmaster_start_time() + interval '30 seconds', clock_timestamp() - interval '1 millisecond')`);
    const r = await store.runRecoverExpired({ limit: 100, maxRecoveries: MAX, graceMs: 0, outageGraceMs: graceMs, failError: INTERRUPTED_RECOVERY });
    expect(new Set(r.recovered)).toEqual(new Set([cutOff, justAfterStart]));
    expect(r.failed).toEqual([]);
    expect(await rowOf(cutOff)).toEqual({ status: 'PENDING', recovery_count: MAX });
    expect(await rowOf(justAfterStart)).toEqual({ status: 'PENDING', recovery_count: MAX });
  });

  it('counts (and fails after maxRecoveries) a lease that expired with the database up for longer', async () => {
    const upFor = (await db.admin.query<{ ms: number }>(`SELECT (extract(epoch FROM clock_timestamp() - pg_postmaster_start_time()) * 1000)::float8 AS ms`)).rows[0]!.ms;
    expect(upFor).toBeGreaterThan(10);
    const graceMs = 1; // the database has been up far longer than this
    const stuck = await exhaustedRun(`clock_timestamp() - interval '1 millisecond'`);
    const once = await exhaustedRun(`clock_timestamp() - interval '1 millisecond'`);
    await db.admin.query('UPDATE runs SET recovery_count = 0 WHERE id = $1', [once]);
    const r = await store.runRecoverExpired({ limit: 100, maxRecoveries: MAX, graceMs: 0, outageGraceMs: graceMs, failError: INTERRUPTED_RECOVERY });
    expect(r.failed).toEqual([stuck]);
    expect(r.recovered).toEqual([once]);
    expect(await rowOf(stuck)).toEqual({ status: 'FAILED', recovery_count: MAX });
    expect(await rowOf(once)).toEqual({ status: 'PENDING', recovery_count: 1 });
  });
});
