import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrate, migrationNames, schemaVersionCheck } from '../../src/store/postgres/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

let db: TestDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  admin = new pg.Pool({ connectionString: db.url, max: 1 });
});

afterAll(async () => {
  await admin?.end();
  await db?.drop();
});

it('4 migrators starting at once apply each migration exactly once, and readiness follows', async () => {
  const names = await migrationNames();
  expect(names[0]).toBe('0001_init.sql');
  expect(await schemaVersionCheck({ pool: admin })).toEqual({ ok: false, applied: [], pending: names, unknown: [] });

  const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: db.url, max: 1 }));
  try {
    const results = await Promise.all(pools.map((pool) => migrate({ pool })));
    expect(results.filter((r) => r.applied.length > 0)).toEqual([{ applied: names }]);
    expect(results.filter((r) => r.applied.length === 0)).toHaveLength(3);
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
  const recorded = await admin.query<{ name: string }>('SELECT name FROM waymark_migrations ORDER BY name');
  expect(recorded.rows.map((r) => r.name)).toEqual(names);
  expect(await schemaVersionCheck({ pool: admin })).toEqual({ ok: true, applied: names, pending: [], unknown: [] });
  expect(await migrate({ pool: admin })).toEqual({ applied: [] });
});

it('a failing migration rolls the whole run back, numbers may have gaps but never repeat', async () => {
  const other = await createTestDatabase('waymark_migrate');
  const pool = new pg.Pool({ connectionString: other.url, max: 1 });
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-migrations-'));
  try {
    await writeFile(path.join(dir, '0001_good.sql'), 'CREATE TABLE good (id int);');
    await writeFile(path.join(dir, '0002_bad.sql'), 'CREATE TABLE bad (id int); SELECT no_such_function();');
    await expect(migrate({ pool, dir })).rejects.toMatchObject({ code: '42883' });
    const tables = await pool.query(`SELECT to_regclass('good') AS good, to_regclass('waymark_migrations') AS log`);
    expect(tables.rows[0]).toEqual({ good: null, log: null });

    await writeFile(path.join(dir, '0002_bad.sql'), 'SELECT 1;');
    await writeFile(path.join(dir, '0004_after_a_gap.sql'), 'SELECT 1;');
    await writeFile(path.join(dir, '0004_twin.sql'), 'SELECT 1;');
    await expect(migrate({ pool, dir })).rejects.toThrow(/0004_after_a_gap.sql and 0004_twin.sql share the number 0004/);
    await rm(path.join(dir, '0004_twin.sql'));
    expect((await migrate({ pool, dir })).applied).toEqual(['0001_good.sql', '0002_bad.sql', '0004_after_a_gap.sql']);
    // The number handed out earlier lands later: applied on the next migrate, after the higher one.
    await writeFile(path.join(dir, '0003_late.sql'), 'SELECT 1;');
    expect((await migrate({ pool, dir })).applied).toEqual(['0003_late.sql']);
  } finally {
    await pool.end();
    await other.drop();
    await rm(dir, { recursive: true, force: true });
  }
});
