import pg from 'pg';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
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

/** Commits and WAL bytes of one database between two readings (pg_stat_database, pg_stat_wal). */
export async function walCounters(url: string): Promise<{ commits: number; walBytes: number }> {
  // Backends flush their statistics at most once a second; wait so the reading includes the work.
  await new Promise((r) => setTimeout(r, 1500));
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query('SELECT pg_stat_clear_snapshot()');
    const db = await c.query<{ xact_commit: string }>('SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()');
    const wal = await c.query<{ wal_bytes: string }>('SELECT wal_bytes FROM pg_stat_wal');
    return { commits: Number(db.rows[0]!.xact_commit), walBytes: Number(wal.rows[0]!.wal_bytes) };
  } finally {
    await c.end();
  }
}
