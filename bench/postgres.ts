import pg from 'pg';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEmbeddedPostgres } from '../src/cli/embedded-postgres.js';

export interface BenchDatabase {
  /** The server's admin URL (database `postgres`). */
  adminUrl: string;
  /** A fresh database on it. */
  create(name: string): Promise<string>;
  close(): Promise<void>;
}

/** DATABASE_URL when set, else an embedded PostgreSQL at default durability (fsync and synchronous_commit on). */
export async function openBenchDatabase(): Promise<BenchDatabase> {
  let adminUrl = process.env.DATABASE_URL;
  let stop = async () => {};
  if (!adminUrl) {
    const dir = await mkdtemp(path.join(tmpdir(), 'waymark-bench-'));
    const handle = await startEmbeddedPostgres({ dataDir: path.join(dir, 'pg'), port: 0, persistent: false });
    adminUrl = handle.url;
    stop = async () => {
      await handle.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const created: string[] = [];
  return {
    adminUrl,
    async create(name) {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${name}`);
      await c.end();
      created.push(name);
      const url = new URL(adminUrl!);
      url.pathname = `/${name}`;
      return url.toString();
    },
    async close() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      for (const name of created) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
      await stop();
    },
  };
}

/**
 * Write transactions and WAL bytes so far, read exactly rather than from the statistics views
 * (pg_stat_database is flushed by idle backends only every few seconds): the transaction id counter
 * (every committed write transaction takes one; this reading takes one too, subtracted) and the WAL
 * insert position. Both are cluster-wide: take readings while nothing else writes.
 */
export async function walCounters(url: string): Promise<{ commits: number; walBytes: number }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query<{ xid: string; wal: string }>(
      "SELECT pg_current_xact_id()::text AS xid, pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::text AS wal");
    return { commits: Number(rows[0]!.xid), walBytes: Number(rows[0]!.wal) };
  } finally {
    await c.end();
  }
}

/**
 * A bench row run alone (`node --import tsx bench/<row>.ts`): when `moduleUrl` is the script node
 * was started with, `measure` runs on a bench database that is closed after it; otherwise (the row
 * imported by bench/main.ts) nothing happens.
 */
export async function runAlone(moduleUrl: string, measure: (db: BenchDatabase) => Promise<void>): Promise<void> {
  if (!process.argv[1] || path.resolve(process.argv[1]) !== fileURLToPath(moduleUrl)) return;
  const db = await openBenchDatabase();
  try {
    await measure(db);
  } finally {
    await db.close();
  }
}
