// Item 3 of the benchmark: the ten-step workflow through the gRPC API, a `waymark server` process
// and a separate client process (bench/grpc-client.ts) running StartRun with wait.
import { spawn, execFile } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = promisify(execFile);

export interface GrpcServer {
  address: string;
  stop(): Promise<void>;
}

export async function startServer(databaseUrl: string): Promise<GrpcServer> {
  const child = spawn(process.execPath, [path.join(root, 'bin/waymark.js'), 'server'], {
    cwd: root,
    env: {
      ...process.env, DATABASE_URL: databaseUrl, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0',
      WAYMARK_WORKFLOWS: 'bench/workflows.ts', WAYMARK_LOG_LEVEL: 'info', WAYMARK_SHUTDOWN_GRACE_MS: '5000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const address = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      try {
        const l = JSON.parse(line) as { msg?: string; address?: string };
        if (l.msg?.startsWith('waymark ') && l.msg.includes(' listening on ')) resolve(String(l.address));
      } catch { /* not a log line */ }
    });
    void exited.then(() => reject(new Error('waymark server exited before listening')));
  });
  return {
    address,
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs `runs` runs at `concurrency` from a separate client process. */
export async function measureGrpc(server: GrpcServer, runs: number, concurrency: number, steps: number) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'bench/grpc-client.ts'), server.address, String(runs), String(concurrency)], { cwd: root });
  const r = JSON.parse(stdout.trim().split('\n').at(-1)!) as { runsPerSec: number; runP50Ms: number; runP99Ms: number };
  return { stepsPerSec: r.runsPerSec * steps, runP50Ms: r.runP50Ms, runP99Ms: r.runP99Ms };
}

/** Event latency across replicas (bench/events-client.ts): a signal on A to the emitted entry at a follower on B. */
export async function measureEvents(a: GrpcServer, b: GrpcServer, rounds: number) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(root, 'bench/events-client.ts'), a.address, b.address, String(rounds)], { cwd: root });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as { sendP50Ms: number; sendP99Ms: number; commitP50Ms: number; commitP99Ms: number };
}
