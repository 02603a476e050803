import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { migrate } from '../../src/store/postgres/migrate.js';

export interface TestDatabase {
  /** Connection URL of this file's own database. */
  url: string;
  name: string;
  /** Drops the database (terminating leftover connections). */
  drop(): Promise<void>;
}

/** Creates a fresh, empty database for one test file, so files run in parallel without interfering. */
export async function createTestDatabase(prefix = 'waymark_test'): Promise<TestDatabase> {
  const adminUrl = inject('databaseUrl');
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        // pg's pool.end() resolves before its connections have finished closing; terminating them
        // (FORCE) then surfaces as an unhandled 57P01 in the test. Let closing sessions go first,
        // and force only what a test leaked.
        for (let attempt = 0; ; attempt++) {
          try {
            await c.query(`DROP DATABASE IF EXISTS ${name}${attempt >= 40 ? ' WITH (FORCE)' : ''}`);
            break;
          } catch (err) {
            if ((err as { code?: string }).code !== '55006' || attempt >= 40) throw err;
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        }
      } finally {
        await c.end();
      }
    },
  };
}

export interface MigratedDatabase extends TestDatabase {
  /** A small pool on the database for the test's own queries (backdating rows, truncating). */
  admin: pg.Pool;
}

/** A fresh database with Waymark's migrations applied; `drop()` also ends the admin pool. */
export async function createMigratedDatabase(prefix?: string, adminPoolSize = 2): Promise<MigratedDatabase> {
  const db = await createTestDatabase(prefix);
  const admin = new pg.Pool({ connectionString: db.url, max: adminPoolSize });
  await migrate({ pool: admin });
  return {
    ...db,
    admin,
    async drop() {
      await admin.end();
      await db.drop();
    },
  };
}
