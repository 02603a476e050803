import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * Budget locks across processes: two PostgresStore instances on one database stand for two
 * replicas. The lock is a session advisory lock, so it holds between them, and a holder whose
 * session dies (its process was killed) loses it at once.
 */

let db: MigratedDatabase;
let admin: pg.Pool;
let a: PostgresStore;
let b: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
  a = await PostgresStore.connect({ url: db.url, applicationName: 'budget-lock-a' });
  b = await PostgresStore.connect({ url: db.url, applicationName: 'budget-lock-b' });
});

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await db?.drop();
});

async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  void p.then(() => { settled = true; }, () => { settled = true; });
  await new Promise((r) => setTimeout(r, ms));
  return settled;
}

describe('budget locks on PostgreSQL', () => {
  it('one replica waits for the other to release the same tree', async () => {
    const held = await a.budgetLock({ namespace: 'default', rootRunId: 'tree-1' });
    const waiting = b.budgetLock({ namespace: 'default', rootRunId: 'tree-1' });
    expect(await settlesWithin(waiting, 200)).toBe(false);
    await held.release();
    await (await waiting).release();
  });

  it("a holder whose session dies loses the lock: the other replica gets it", async () => {
    const lost = await a.budgetLock({ namespace: 'default', rootRunId: 'tree-2' });
    const waiting = b.budgetLock({ namespace: 'default', rootRunId: 'tree-2' });
    expect(await settlesWithin(waiting, 200)).toBe(false);
    // The holding replica is "killed": its lock session is terminated.
    const { rowCount } = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'budget-lock-a:budget' AND datname = current_database()`,
    );
    expect(rowCount).toBeGreaterThan(0);
    await (await waiting).release();
    // The holder's own release afterwards is harmless: its dead connection is discarded.
    await lost.release();
  });
});
