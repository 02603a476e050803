// Restate 1.7 side by side (bench-only dependencies, bench/package.json): its server binary from
// `@restatedev/restate-server`, a service endpoint in its own node process (bench/restate-endpoint.ts)
// and the load from a separate client process (bench/restate-client.ts) through the HTTP ingress:
// the same three-process shape as the Waymark gRPC rows (bench/grpc.ts).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { processCpuMs } from './cpu.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const run = promisify(execFile);

export interface RestateBench {
  ingressPort: number;
  /** The server's and the endpoint's processes (their CPU is read per pass). */
  serverPid: number;
  endpointPid: number;
  /** Stops the endpoint and the server (SIGTERM, SIGKILL after 5 s) and removes the scratch directory. */
  stop(): Promise<void>;
}

/** A port free on loopback now (the server is told it; a race with another process is possible and fails loudly). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The server binary the package ships for this platform (its `restate-server` bin script only spawns it). */
function serverBinary(): string {
  const require = createRequire(path.join(here, 'package.json'));
  return require.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`);
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`restate: ${what} not ready after ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Starts the Restate server and the endpoint, registers the endpoint, and waits for one invocation to succeed. */
export async function launchRestate(): Promise<RestateBench> {
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-bench-restate-'));
  const children: ChildProcess[] = [];
  const output: string[] = [];
  const keep = (child: ChildProcess, name: string) => {
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (l) => { output.push(`${name}: ${l}`); if (output.length > 40) output.shift(); });
    }
  };
  // A bench that throws, or exits before stop() (a closed pipe, process.exit), must not leave a
  // server or its scratch directory behind: an exit handler can only do synchronous work.
  const killAll = () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', killAll);
  const stop = async () => {
    await Promise.all(children.map(async (c) => {
      if (c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }));
    process.removeListener('exit', killAll);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const [ingressPort, adminPort, nodePort] = [await freePort(), await freePort(), await freePort()];
    const server = spawn(serverBinary(), ['--bind-ip', '127.0.0.1', '--listen-mode', 'tcp', '--base-dir', path.join(dir, 'data'), '--no-logo'], {
      cwd: dir,
      env: {
        ...process.env, RESTATE_DISABLE_TELEMETRY: 'true', RESTATE_BIND_PORT: String(nodePort),
        RESTATE_ADMIN__BIND_PORT: String(adminPort), RESTATE_INGRESS__BIND_PORT: String(ingressPort),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(server);
    keep(server, 'restate-server');
    const endpoint = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'restate-endpoint.ts')], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(endpoint);
    keep(endpoint, 'endpoint');
    const endpointPort = await new Promise<number>((resolve, reject) => {
      createInterface({ input: endpoint.stdout! }).on('line', (l) => {
        try { resolve((JSON.parse(l) as { port: number }).port); } catch { /* not the port line */ }
      });
      endpoint.once('exit', (code) => reject(new Error(`restate endpoint exited (${code}) before it listened`)));
    });
    const admin = `http://127.0.0.1:${adminPort}`;
    await until('admin API', 60_000, async () => ((await fetch(`${admin}/health`)).ok ? true : undefined));
    await until('deployment registration', 30_000, async () => {
      const res = await fetch(`${admin}/deployments`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri: `http://127.0.0.1:${endpointPort}` }),
      });
      return res.ok ? true : undefined;
    });
    await until('ingress', 30_000, async () => {
      const res = await fetch(`http://127.0.0.1:${ingressPort}/bench/tenSteps`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n: 0 }),
      });
      return res.ok ? true : undefined;
    });
    return { ingressPort, serverPid: server.pid!, endpointPid: endpoint.pid!, stop };
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${output.join('\n')}`, { cause: err });
  }
}

/**
 * `runs` invocations at `concurrency` from a separate client process; steps/s, per-invocation
 * p50/p99, and CPU per invocation (ms) of the server and the endpoint (over the client's lifetime)
 * and of the client (over its timed window).
 */
export async function measureRestate(bench: RestateBench, runs: number, concurrency: number, steps: number) {
  const server0 = processCpuMs(bench.serverPid);
  const endpoint0 = processCpuMs(bench.endpointPid);
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(here, 'restate-client.ts'), String(bench.ingressPort), String(runs), String(concurrency)], { cwd: root });
  const serverCpuMs = processCpuMs(bench.serverPid) - server0;
  const endpointCpuMs = processCpuMs(bench.endpointPid) - endpoint0;
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { runsPerSec: number; runP50Ms: number; runP99Ms: number; cpuMs: number };
  return {
    stepsPerSec: r.runsPerSec * steps, runP50Ms: r.runP50Ms, runP99Ms: r.runP99Ms,
    serverCpuMsPerRun: serverCpuMs / runs, endpointCpuMsPerRun: endpointCpuMs / runs, clientCpuMsPerRun: r.cpuMs / runs,
  };
}
