import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';

/*
 * PostgreSQL's lease sessions (src/store/postgres/lease-sessions.ts) beyond the conformance suite:
 * a session whose backend is terminated while its process lives reconnects and registers a new
 * lock, and from then on protects the holder's runs again.
 */

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted', reason: 'interrupted' };
const RECLAIM = { limit: 100, maxRecoveries: 3, failError: INTERRUPTED };

let db: MigratedDatabase;
let store: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_lease_sessions');
  store = await PostgresStore.connect({ url: db.url, applicationName: 'lease-sessions', listenerBackoffMs: { min: 10, max: 50 } });
});

afterAll(async () => {
  await store?.close();
  await db?.drop();
});

describe('lease sessions on PostgreSQL', () => {
  it('a terminated session reconnects under a new key; the holder\'s runs are covered again', async () => {
    await store.leaseSessionOpen({ holder: 'h1' });
    const { run } = await store.runCreate({
      namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null,
      leaseFor: { holder: 'h1', ttlMs: 600_000 },
    });
    const before = await db.admin.query<{ lock_key: number }>('SELECT lock_key FROM lease_sessions WHERE holder = $1', ['h1']);
    const pid = store.leaseSessionPid('h1');
    expect(pid).not.toBeNull();
    await db.admin.query('SELECT pg_terminate_backend($1)', [pid]);
    const again = await until('the session registered again', async () => {
      const { rows } = await db.admin.query<{ lock_key: number }>('SELECT lock_key FROM lease_sessions WHERE holder = $1', ['h1']);
      const now = store.leaseSessionPid('h1');
      return rows[0] && rows[0].lock_key !== before.rows[0]!.lock_key && now !== null && now !== pid ? rows[0] : undefined;
    }, 20_000, 20);
    const { rows: locks } = await db.admin.query('SELECT pid FROM pg_locks WHERE locktype = $1 AND objid = $2::oid AND objsubid = 2 AND granted', ['advisory', again.lock_key]);
    expect(locks.map((l: { pid: number }) => l.pid)).toEqual([store.leaseSessionPid('h1')]);
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
    expect((await store.runGet({ runId: run.id, namespace: 'default' })).leaseEpoch).toBe(1);

    await store.leaseSessionClose({ holder: 'h1' });
    expect((await db.admin.query('SELECT 1 FROM lease_sessions WHERE holder = $1', ['h1'])).rowCount).toBe(0);
    expect(await store.runRecoverDeadSessions(RECLAIM)).toEqual({ recovered: [], failed: [] });
  });
});
