import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { migrate } from '../../src/store/postgres/migrate.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { runConformanceSuite } from './journal-store.conformance.js';

let db: TestDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Pool({ connectionString: db.url, max: 2 });
  await migrate({ pool: admin });
});

afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

runConformanceSuite('postgres', async (options) => {
  await admin.query('TRUNCATE runs, journal, suspension_deadlines');
  await admin.query('UPDATE sweeper_leader SET holder = NULL, expires_at = NULL');
  const store = await PostgresStore.connect({ url: db.url, limits: options?.limits, applicationName: 'conformance' });
  return {
    store,
    // Backdate every timestamp the store decides on instead of sleeping (STYLE habit 7).
    advance: async (ms) => {
      await admin.query(`UPDATE runs SET created_at = created_at - $1 * interval '1 millisecond',
        updated_at = updated_at - $1 * interval '1 millisecond',
        lease_expires_at = lease_expires_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE suspension_deadlines SET deadline_at = deadline_at - $1 * interval '1 millisecond'`, [ms]);
      await admin.query(`UPDATE sweeper_leader SET expires_at = expires_at - $1 * interval '1 millisecond'`, [ms]);
    },
    close: () => store.close(),
  };
});
