// The command line's own costs (issue 30): `waymark --version`, one operator command against a
// local `waymark dev`, and `waymark dev` from start to serving on a data directory that already
// exists (its embedded PostgreSQL initialised, its migrations applied). Each is a fresh process,
// timed from spawn to exit (or to the "listening" line, which is logged once readiness passed).
// `node --import tsx bench/startup.ts [checkout]` runs these rows alone, against another checkout
// when one is given (how docs/performance.md measured main's code before the compiled build).
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { fmt, median } from './stats.js';

export interface StartupFigures {
  versionMs: number;
  commandMs: number;
  startMs: number;
}

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Medians of `reps` fresh processes each, for the `waymark` at `root` (default this checkout). */
export async function measureStartup(reps: number, root = ROOT): Promise<StartupFigures> {
  const bin = path.join(root, 'bin/waymark.js');
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-bench-startup-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env, WAYMARK_DATA_DIR: path.join(dir, '.waymark'), WAYMARK_ADDR: `127.0.0.1:${port}`,
    WAYMARK_METRICS_ADDR: '127.0.0.1:0', WAYMARK_LOG_LEVEL: 'info',
  };
  delete env.DATABASE_URL;
  const version: number[] = [];
  for (let i = 0; i < reps; i++) version.push(await timedExit(bin, ['--version'], dir, env));
  // The first start creates the data directory; only the later ones are timed.
  let server = await startDev(bin, dir, env);
  await server.stop();
  const start: number[] = [];
  for (let i = 0; i < reps; i++) {
    server = await startDev(bin, dir, env);
    start.push(server.ms);
    if (i < reps - 1) await server.stop();
  }
  try {
    const command: number[] = [];
    for (let i = 0; i < reps; i++) command.push(await timedExit(bin, ['workflows', 'list', '--addr', `127.0.0.1:${port}`], dir, env));
    return { versionMs: median(version), commandMs: median(command), startMs: median(start) };
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Milliseconds from spawn to a zero exit. */
function timedExit(bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<number> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin, ...args], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve(performance.now() - t0) : reject(new Error(`waymark ${args.join(' ')} exited ${code}: ${stderr}`))));
  });
}

/** `waymark dev`, resolved once it logged "listening" (after its readiness check passed). */
function startDev(bin: string, cwd: string, env: NodeJS.ProcessEnv): Promise<{ ms: number; stop: () => Promise<void> }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin, 'dev'], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes(' listening on ')) resolve({ ms: performance.now() - t0, stop });
    });
    void exited.then(() => reject(new Error(`waymark dev exited before listening: ${stderr}`)));
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    }).once('error', reject);
  });
}

export function startupRows(f: StartupFigures): string[][] {
  return [
    ['CLI: `waymark --version` (goal < 150 ms)', '', fmt(f.versionMs, 0), ''],
    ['CLI: `waymark workflows list` against a local server (goal < 400 ms)', '', fmt(f.commandMs, 0), ''],
    ['`waymark dev` start to serving, existing data directory (goal < 2 s)', '', fmt(f.startMs, 0), ''],
  ];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = process.argv[2] ? path.resolve(process.argv[2]) : ROOT;
  const figures = await measureStartup(Number(process.env.BENCH_REPS ?? 5), root);
  process.stdout.write(`${root}\n| measurement | | median ms | |\n| --- | --- | --- | --- |\n${startupRows(figures).map((r) => `| ${r.join(' | ')} |`).join('\n')}\n`);
}
