// The idle rows of the benchmark (issue 29 item 6): what a `waymark server` process spends while
// 1,000 StreamRunEvents on a parked run, or 500 PollTask long polls, stay open and nothing happens.
// The client (bench/idle-client.ts) opens them; the server's CPU is read from /proc over 5 s.
// Alone: `node --import tsx bench/idle.ts` (BENCH_SERVER_ROOT: another checkout's server, for a before/after).
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { processCpuMs } from './cpu.js';
import { runAlone } from './postgres.js';
import { startServer } from './grpc.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const IDLE_HOLD_MS = 5_000;
const IDLE_SETTLE_MS = 5_000;

/** Server CPU (cores: CPU seconds per second) over IDLE_HOLD_MS with `streams` idle streams and `polls` idle long polls open. */
export async function measureIdle(databaseUrl: string, streams: number, polls: number): Promise<{ cores: number }> {
  const server = await startServer(databaseUrl, { WAYMARK_MAX_STREAMS: '10000', WAYMARK_CLIENT_MAX_STREAMS: '10000', WAYMARK_CLIENT_RATE_LIMIT: '0' }, true);
  let client: ChildProcess | null = null;
  try {
    client = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench/idle-client.ts'), server.address, String(streams), String(polls)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: client!.stdout! }).on('line', (l) => l === 'ready' && resolve());
      client!.once('exit', () => reject(new Error('the idle client exited before it was ready')));
    });
    // The calls' own start (a poll's heartbeat, claim and look ahead) is not idleness: let it finish.
    // Measured from there, the window ends well inside a poll's 30 s wait.
    await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_MS));
    const before = processCpuMs(server.pid);
    await new Promise((resolve) => setTimeout(resolve, IDLE_HOLD_MS));
    return { cores: (processCpuMs(server.pid) - before) / IDLE_HOLD_MS };
  } finally {
    client?.kill('SIGKILL');
    await server.stop();
  }
}

await runAlone(import.meta.url, async (db) => {
  const s = await measureIdle(await db.create('bench_idle_streams'), 1_000, 0);
  const p = await measureIdle(await db.create('bench_idle_polls'), 0, 500);
  process.stdout.write(`${JSON.stringify({ streamsCores: s.cores, pollsCores: p.cores })}\n`);
});
