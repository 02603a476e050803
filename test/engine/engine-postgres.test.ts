import type pg from 'pg';
import { beforeAll } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { engineSuite } from './engine-suite.js';

/*
 * The engine suite on PostgreSQL: the engine reads the database clock, and time passes by
 * backdating the timestamp columns the store decides on (as the conformance suite does).
 */
let db: MigratedDatabase;
let admin: pg.Pool;
const open: PostgresStore[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_engine');
  admin = db.admin;
});

engineSuite('PostgresStore', {
  fakeClock: false,
  async makeStore() {
    // One test at a time per file: close the previous test's store and start from empty tables.
    await Promise.all(open.splice(0).map((s) => s.close()));
    await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
    const store = await PostgresStore.connect({ url: db.url, applicationName: 'engine-suite', poolSize: 4 });
    open.push(store);
    return store;
  },
  async advance(_clock, ms) {
    await admin.query(`UPDATE runs SET created_at = created_at - $1 * interval '1 millisecond',
      updated_at = updated_at - $1 * interval '1 millisecond',
      lease_expires_at = lease_expires_at - $1 * interval '1 millisecond',
      deadline_at = deadline_at - $1 * interval '1 millisecond'`, [ms]);
    await admin.query(`UPDATE suspension_deadlines SET deadline_at = deadline_at - $1 * interval '1 millisecond'`, [ms]);
  },
  async teardown() {
    await Promise.all(open.splice(0).map((s) => s.close()));
    await db?.drop();
  },
});
