import type pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { LEASE_SESSION_LOCK_CLASS } from '../../src/store/postgres/lease-sessions.js';
import { until } from '../support/until.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { runConformanceSuite } from './journal-store.conformance.js';

let db: MigratedDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
});

afterAll(async () => {
  await db?.drop();
});

runConformanceSuite('postgres', async (options) => {
  await admin.query('TRUNCATE runs, journal, payloads, suspension_deadlines, replicas, lease_sessions, webhook_endpoints, webhook_deliveries, api_keys, flows, remote_tools, remote_workers, remote_tasks, mcp_servers, run_cost_daily, model_deltas, model_delta_counters, schedules');
  await admin.query('UPDATE sweeper_leader SET holder = NULL, expires_at = NULL');
  const store = await PostgresStore.connect({ url: db.url, limits: options?.limits, applicationName: 'conformance' });
  return {
    store,
    // Backdate every timestamp the store decides on instead of sleeping (STYLE habit 7).
    advance: async (ms) => {
      await admin.query(`UPDATE runs SET created_at = created_at - $1 * interval '1 millisecond',
        updated_at = updated_at - $1 * interval '1 millisecond',
        lease_expires_at = lease_expires_at - $1 * interval '1 millisecond',
        deadline_at = deadline_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE suspension_deadlines SET deadline_at = deadline_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE sweeper_leader SET expires_at = expires_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE replicas SET started_at = started_at - $1 * interval '1 millisecond',
        heartbeat_at = heartbeat_at - $1 * interval '1 millisecond', expires_at = expires_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE schedules SET due_at = due_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE webhook_deliveries SET created_at = created_at - $1 * interval '1 millisecond',
        next_attempt_at = next_attempt_at - $1 * interval '1 millisecond', claimed_until = claimed_until - $1 * interval '1 millisecond'`, [ms]);
      // Secret expiries live in a JSON array (ISO strings).
      await admin.query(`UPDATE webhook_endpoints SET created_at = created_at - $1 * interval '1 millisecond', secrets = (
        SELECT jsonb_agg(CASE WHEN s->>'expiresAt' IS NULL THEN s ELSE jsonb_set(s, '{expiresAt}', to_jsonb(to_char(
          ((s->>'expiresAt')::timestamptz - $1 * interval '1 millisecond') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))) END)
        FROM jsonb_array_elements(secrets) s)`, [ms]);
      await admin.query(`UPDATE remote_workers SET heartbeat_at = heartbeat_at - $1 * interval '1 millisecond',
        expires_at = expires_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE remote_tasks SET created_at = created_at - $1 * interval '1 millisecond',
        available_at = available_at - $1 * interval '1 millisecond', deadline_at = deadline_at - $1 * interval '1 millisecond',
        claim_expires_at = claim_expires_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE api_keys SET created_at = created_at - $1 * interval '1 millisecond',
        revoked_at = revoked_at - $1 * interval '1 millisecond'`, [ms]);
    },
    endLeaseSession: async (holder) => {
      const { rows } = await admin.query<{ lock_key: number }>('SELECT lock_key FROM lease_sessions WHERE holder = $1', [holder]);
      await store.leaseSessionEnd(holder);
      // The backend releases the lock as it exits, a moment after the connection closes.
      await until('the lease session lock released', async () => {
        const held = await admin.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid AND objid = $2::oid AND objsubid = 2`,
          [LEASE_SESSION_LOCK_CLASS, rows[0]?.lock_key ?? 0]);
        return held.rowCount === 0 ? true : undefined;
      }, 10_000, 10);
    },
    close: () => store.close(),
  };
});
