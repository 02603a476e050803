import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startEmbeddedPostgres } from '../../src/cli/embedded-postgres.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 16, findings 8 and 9: the embedded PostgreSQL of `waymark dev`, with real processes.
 * 8: a SIGKILLed `waymark dev` leaves its PostgreSQL running; the next `waymark dev` on the data
 *    directory adopts it, and its clean stop stops it: no PostgreSQL process is left behind.
 * 9: as root, from a checkout under a folder the `postgres` user cannot enter, `waymark dev` starts
 *    (the binaries are copied where postgres can run them, the data kept in /var/lib/waymark).
 * And a start that fails right after PostgreSQL started (its database cannot be created) stops it.
 */

const TIMEOUT = 180_000;
const cleanups: (() => void)[] = [];
const processes: WaymarkProcess[] = [];

afterAll(async () => {
  for (const p of processes) await p.stop('SIGKILL');
  for (const c of cleanups.reverse()) c();
}, TIMEOUT);

/** Pids of the processes whose command line names `dir` (PostgreSQL's postmaster runs with `-D <dir>`). */
function processesOn(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      const state = /\) (\S)/.exec(readFileSync(`/proc/${entry}/stat`, 'utf8'))?.[1];
      if (cmdline.includes(dir) && state !== 'Z') pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Kills every leftover PostgreSQL on `dir` (a failed test must not leak one either). */
function killAll(dir: string): void {
  for (const pid of processesOn(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function devEnv(dataDir?: string): Record<string, string | undefined> {
  return { DATABASE_URL: undefined, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_LOG_LEVEL: 'debug', ...(dataDir ? { WAYMARK_DATA_DIR: dataDir } : {}) };
}

describe.skipIf(process.platform !== 'linux')('embedded PostgreSQL faults', () => {
  it('finding 8: after a SIGKILL of waymark dev, the next start adopts its PostgreSQL and a clean stop leaves none behind', { timeout: TIMEOUT }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'waymark-orphan-'));
    chmodSync(dir, 0o755); // as root, PostgreSQL runs as `postgres`, which must enter it
    cleanups.push(() => {
      killAll(dir);
      rmSync(dir, { recursive: true, force: true });
    });
    const pgDir = path.join(dir, 'pg');

    const first = WaymarkProcess.start(['dev'], { env: devEnv(dir) });
    processes.push(first);
    await first.listening();
    const postmaster = postmasterPid(pgDir);
    await first.stop('SIGKILL');
    // The fault's precondition: PostgreSQL outlives the killed process.
    expect(alive(postmaster)).toBe(true);

    const second = WaymarkProcess.start(['dev'], { env: devEnv(dir) });
    processes.push(second);
    await second.listening();
    expect(postmasterPid(pgDir)).toBe(postmaster);
    expect(second.logs.some((l) => String(l.postgres ?? '').includes('adopting the PostgreSQL server'))).toBe(true);
    const exit = await second.stop('SIGTERM');
    expect(exit.code).toBe(0);
    expect(alive(postmaster)).toBe(false);
    expect(processesOn(pgDir)).toEqual([]);

    // And a start after that is an ordinary one, which stops its own server.
    const third = WaymarkProcess.start(['dev'], { env: devEnv(dir) });
    processes.push(third);
    await third.listening();
    expect(postmasterPid(pgDir)).not.toBe(postmaster);
    expect((await third.stop('SIGTERM')).code).toBe(0);
    expect(processesOn(pgDir)).toEqual([]);
  });

  it('a start whose database cannot be created stops the PostgreSQL it started: none is left behind', { timeout: TIMEOUT }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'waymark-nodb-'));
    chmodSync(dir, 0o755);
    cleanups.push(() => {
      killAll(dir);
      rmSync(dir, { recursive: true, force: true });
    });
    const pgDir = path.join(dir, 'pg');
    // A data directory whose `postgres` database refuses connections: creating `waymark` fails
    // right after PostgreSQL started (SQLSTATE 55000).
    const pg0 = await startEmbeddedPostgres({ dataDir: pgDir, port: 0, persistent: true });
    const admin = new pg.Client({ connectionString: pg0.urlFor('template1') });
    await admin.connect();
    await admin.query('ALTER DATABASE postgres ALLOW_CONNECTIONS false');
    await admin.end();
    await pg0.stop();
    expect(processesOn(pgDir)).toEqual([]);

    const dev = WaymarkProcess.start(['dev'], { env: devEnv(dir) });
    processes.push(dev);
    const exit = await dev.exited;
    expect(exit.code).not.toBe(0);
    expect(`${dev.stderr}${JSON.stringify(dev.logs)}`).toContain('not currently accepting connections');
    expect(processesOn(pgDir)).toEqual([]);
  });

  it.skipIf(userInfo().uid !== 0)('finding 9: as root, from a checkout the postgres user cannot enter, waymark dev starts and stops cleanly', { timeout: TIMEOUT }, async () => {
    // A checkout under a private (0700) folder: hard links of what `waymark dev` runs, instantly.
    const root = mkdtempSync(path.join(tmpdir(), 'waymark-private-'));
    chmodSync(root, 0o700);
    const app = path.join(root, 'app');
    mkdirSync(app);
    for (const part of ['bin', 'src', 'examples', 'node_modules', 'package.json', 'tsconfig.json']) {
      const cp = spawnSync('cp', ['-al', path.resolve(part), path.join(app, part)]);
      expect(cp.status).toBe(0);
    }
    // The data directory it asks for (.waymark/pg under the checkout) moves to /var/lib/waymark/<key>.
    const requested = path.join(app, '.waymark', 'pg');
    const fallback = path.join('/var/lib/waymark', createHash('sha256').update(requested).digest('hex').slice(0, 12));
    cleanups.push(() => {
      killAll(requested);
      killAll(fallback);
      rmSync(root, { recursive: true, force: true });
      rmSync(fallback, { recursive: true, force: true });
    });

    const dev = WaymarkProcess.start(['dev'], { env: devEnv(), cwd: app, bin: path.join(app, 'bin', 'waymark.js') });
    processes.push(dev);
    await dev.listening();
    expect(existsSync(path.join(fallback, 'pg', 'postmaster.pid'))).toBe(true);
    expect((await dev.stop('SIGTERM')).code).toBe(0);
    expect(processesOn(fallback)).toEqual([]);
  });
});
