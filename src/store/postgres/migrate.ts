import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { SchemaStatus } from '../store-kind.js';
import { translatePgError } from './pg-errors.js';

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
const FILE_NAME = /^(\d{4})_[a-z0-9_]+\.sql$/;
/** Key of the transaction-scoped advisory lock that serialises migrators ('waymark' in ASCII). */
const MIGRATION_LOCK_KEY = '0x7761796d61726b';

/**
 * The migration files shipped with this build, in the order they apply. Numbers are unique; gaps
 * are allowed, because numbers are handed to branches developed in parallel ahead of time (0010
 * may land before 0008): migrate() applies every file not yet recorded, in order, whenever it
 * arrives. Two files with one number are the merge accident this refuses.
 */
export async function migrationNames(dir = MIGRATIONS_DIR): Promise<string[]> {
  const names = (await readdir(dir)).filter((f) => FILE_NAME.test(f)).sort();
  names.forEach((name, i) => {
    const previous = names[i - 1];
    if (previous !== undefined && FILE_NAME.exec(previous)![1] === FILE_NAME.exec(name)![1]) {
      throw new Error(`migrations ${previous} and ${name} share the number ${FILE_NAME.exec(name)![1]}: renumber the later one`);
    }
  });
  return names;
}

/**
 * Applies pending migrations, in order, in one transaction under `pg_advisory_xact_lock`, recording
 * each in `waymark_migrations`. Several replicas starting at once queue on the lock; each later one
 * finds nothing pending (test/store/migrate.test.ts runs 4 at once). The lock is transaction-scoped
 * so it cannot outlive a crashed migrator. Forward-only: a failed file rolls the whole run back.
 */
export async function migrate({ pool, dir }: { pool: pg.Pool; dir?: string }): Promise<{ applied: string[] }> {
  const names = await migrationNames(dir);
  const client = await pool.connect().catch((err: unknown) => { throw translatePgError(err); });
  let broken: Error | undefined;
  const onError = (err: Error) => {
    broken = err; // a checked-out client has no pool error listener; discard it on release
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    await client.query({ name: 'migrations_lock', text: `SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})` });
    await client.query(`CREATE TABLE IF NOT EXISTS waymark_migrations (
      name text PRIMARY KEY,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await client.query<{ name: string }>('SELECT name FROM waymark_migrations')).rows.map((r) => r.name));
    const applied: string[] = [];
    for (const name of names) {
      if (done.has(name)) continue;
      await client.query(await readFile(`${dir ?? MIGRATIONS_DIR}/${name}`, 'utf8'));
      await client.query({ name: 'migrations_record', text: 'INSERT INTO waymark_migrations (name) VALUES ($1)', values: [name] });
      applied.push(name);
    }
    await client.query('COMMIT');
    return { applied };
  } catch (err) {
    broken = err instanceof Error ? err : new Error(String(err));
    await client.query('ROLLBACK').catch(() => {});
    throw translatePgError(err);
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** Kept as the name this module has always used; the store-agnostic type is SchemaStatus. */
export type SchemaVersion = SchemaStatus;

/** Whether the database's schema is what this build expects; for readiness probes. Read-only. */
export async function schemaVersionCheck({ pool, dir }: { pool: pg.Pool; dir?: string }): Promise<SchemaVersion> {
  const names = await migrationNames(dir);
  try {
    const exists = await pool.query<{ present: boolean }>({
      name: 'migrations_present',
      text: "SELECT to_regclass('waymark_migrations') IS NOT NULL AS present",
    });
    const applied = exists.rows[0]?.present
      ? (await pool.query<{ name: string }>({ name: 'migrations_applied', text: 'SELECT name FROM waymark_migrations ORDER BY name' })).rows.map((r) => r.name)
      : [];
    const pending = names.filter((n) => !applied.includes(n));
    const unknown = applied.filter((n) => !names.includes(n));
    return { ok: pending.length === 0, applied, pending, unknown };
  } catch (err) {
    throw translatePgError(err);
  }
}
