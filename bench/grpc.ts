// Item 3 of the benchmark: the ten-step workflow through the gRPC API, a `waymark server` process
// and a separate client process (bench/grpc-client.ts) running StartRun with wait.
import { spawn, execFile } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { noCpu, processCpuMs, type CpuWindow } from './cpu.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

export interface WaymarkChild {
  pid: number;
  /** SIGTERM (a graceful stop), resolved once the process exited. */
  stop(): Promise<void>;
  /** SIGKILL (what a crash is); resolves with Date.now() right after the signal was sent, once the process exited. */
  kill(): Promise<number>;
  /** SIGSTOP (a stalled process, or one on a machine that vanished: its connections stay open); Date.now() right after. */
  freeze(): number;
}

export interface GrpcServer extends WaymarkChild {
  address: string;
}

/**
 * A `waymark <command>` process on `databaseUrl`, loading bench/workflows.ts, resolved at its first
 * stdout log line that `ready` accepts (with that line). Log lines keep being read (and dropped), so
 * the pipe never fills.
 */
async function startWaymark(command: 'server' | 'sweeper', databaseUrl: string, env: Record<string, string>,
  ready: (line: { msg?: string; address?: string }) => boolean) {
  // BENCH_SERVER_ROOT: run another checkout's server (a before/after in one sitting; WAYMARK_FROM_SOURCE=1 there).
  const serverRoot = process.env.BENCH_SERVER_ROOT ?? root;
  const child = spawn(process.execPath, [path.join(serverRoot, 'bin/waymark.js'), command], {
    cwd: serverRoot,
    env: {
      ...process.env, DATABASE_URL: databaseUrl, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0',
      WAYMARK_WORKFLOWS: 'bench/workflows.ts', WAYMARK_LOG_LEVEL: 'info', WAYMARK_SHUTDOWN_GRACE_MS: '5000',
      // Loopback, and comparable with the figures before authentication existed (its cost: docs/performance.md).
      WAYMARK_AUTH: 'off', ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const line = await new Promise<{ msg?: string; address?: string }>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (text) => {
      try {
        const l = JSON.parse(text) as { msg?: string; address?: string };
        if (ready(l)) resolve(l);
      } catch { /* not a log line */ }
    });
    void exited.then(() => reject(new Error(`waymark ${command} exited before it was ready`)));
  });
  const alive = () => child.exitCode === null && child.signalCode === null;
  const handle: WaymarkChild = {
    pid: child.pid!,
    async stop() {
      if (alive()) child.kill('SIGTERM');
      await exited;
    },
    freeze() {
      child.kill('SIGSTOP');
      return Date.now();
    },
    async kill() {
      if (alive()) child.kill('SIGKILL');
      const at = Date.now();
      await exited;
      return at;
    },
  };
  return { handle, line };
}

/**
 * A `waymark server` (gRPC and executor); `env` adds or overrides settings (lease TTL, a replica tag).
 * Resolved once it listens, or with `executing` once its executor claims runs too (it starts after
 * the listener: a replica that must take over runs at once is waited for until then).
 */
export async function startServer(databaseUrl: string, env: Record<string, string> = {}, executing = false): Promise<GrpcServer> {
  let address = '';
  const { handle } = await startWaymark('server', databaseUrl, env, (l) => {
    if (l.msg?.startsWith('waymark ') && l.msg.includes(' listening on ')) address = String(l.address);
    return executing ? l.msg === 'executor started' && address !== '' : address !== '';
  });
  return { ...handle, address };
}

/** A `waymark sweeper` (the store's recovery loop), resolved once it started. */
export async function startSweeper(databaseUrl: string, env: Record<string, string> = {}): Promise<WaymarkChild> {
  const { handle } = await startWaymark('sweeper', databaseUrl, env, (l) => l.msg === 'waymark sweeper started');
  return handle;
}

/**
 * Runs `runs` runs at `concurrency` from a separate client process (`client`: bench/grpc-client.ts's
 * raw gRPC over node:http2, or @connectrpc/connect). CPU per run (ms): the server's
 * and PostgreSQL's (`postgres`, bench/cpu.ts) over the client's lifetime, the client's over its timed window.
 */
export async function measureGrpc(server: GrpcServer, runs: number, concurrency: number, steps: number, postgres: CpuWindow = noCpu,
  client: 'raw' | 'connect' = 'raw') {
  const server0 = processCpuMs(server.pid);
  const pgSince = postgres();
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'bench/grpc-client.ts'), server.address, String(runs), String(concurrency), client], { cwd: root });
  const serverCpuMs = processCpuMs(server.pid) - server0;
  const pgCpuMs = pgSince();
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { runsPerSec: number; runP50Ms: number; runP99Ms: number; cpuMs: number };
  return {
    stepsPerSec: r.runsPerSec * steps, runP50Ms: r.runP50Ms, runP99Ms: r.runP99Ms,
    serverCpuMsPerRun: serverCpuMs / runs, clientCpuMsPerRun: r.cpuMs / runs, postgresCpuMsPerRun: pgCpuMs / runs,
  };
}

/** Event latency across replicas (bench/events-client.ts): a signal (or an approval decision) on A to the emitted entry at a follower on B. */
export async function measureEvents(a: GrpcServer, b: GrpcServer, rounds: number, mode: 'signal' | 'approval' = 'signal') {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'bench/events-client.ts'), a.address, b.address, String(rounds), mode], { cwd: root });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { sendP50Ms: number; sendP99Ms: number; commitP50Ms: number; commitP99Ms: number };
}

/** Remote tools (bench/remote-client.ts): one tool call per run, in process and served by a worker over WorkerService. */
export async function measureRemote(server: GrpcServer, runs: number, concurrency: number) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'bench/remote-client.ts'), server.address, String(runs), String(concurrency)], { cwd: root });
  type Figures = { callsPerSec: number; p50Ms: number; p99Ms: number };
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { local: Figures; remote: Figures };
}
