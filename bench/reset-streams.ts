// Issue 29's row "StartRun latency while 2,000 reset streams arrive": a `waymark server` process
// answers StartRun (no wait) from a client here, sequentially, first alone and then while another
// HTTP/2 connection opens StartRun streams and resets each at once (HEADERS then RST_STREAM, the
// "rapid reset" pattern). The row says how much the resets slow an honest caller down, and when the
// replica answers again after the burst.
import { spawn } from 'node:child_process';
import http2 from 'node:http2';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunService } from '../src/gen/waymark/v1/run_service_pb.js';
import { startServer } from './grpc.js';
import { openBenchDatabase } from './postgres.js';
import { percentile } from './stats.js';

export interface ResetStreamsFigures {
  resets: number;
  /** StartRun latency alone, ms. */
  aloneP50Ms: number;
  aloneP99Ms: number;
  /** StartRun latency while the resets arrive, ms. */
  duringP50Ms: number;
  duringP99Ms: number;
  /** From the last reset sent to the first StartRun answered after it, ms. */
  answeringAfterMs: number;
}

/** Opens and resets `count` StartRun streams on one connection, `burst` per event-loop turn. */
async function resetStreams(address: string, count: number, burst = 50): Promise<number> {
  const session = http2.connect(`http://${address}`);
  session.on('error', () => undefined); // the server may end a connection that abuses it: that is allowed
  await new Promise<void>((resolve) => session.once('connect', () => resolve()));
  const open = (): boolean => !session.destroyed && !session.closed;
  for (let sent = 0; sent < count && open(); sent++) {
    try {
      const stream = session.request({
        ':method': 'POST', ':path': '/waymark.v1.RunService/StartRun', 'content-type': 'application/grpc', te: 'trailers',
      });
      stream.on('error', () => undefined);
      stream.close(http2.constants.NGHTTP2_CANCEL);
    } catch {
      break; // the session went away under us: the server refused the rest
    }
    if ((sent + 1) % burst === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  const at = Date.now();
  session.destroy();
  return at;
}

/** resetStreams in a child process; resolves with the time it reports its last reset was sent (as soon as it says so). */
async function resetFromChild(address: string, count: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--reset', address, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const at = await new Promise<number>((resolve) => {
    createInterface({ input: child.stdout }).once('line', (line) => resolve(Number(line) || Date.now()));
    void exited.then(() => resolve(Date.now()));
  });
  return at;
}

export async function measureResetStreams(databaseUrl: string, resets = 2_000, calls = 40): Promise<ResetStreamsFigures> {
  const server = await startServer(databaseUrl);
  try {
    const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${server.address}` }));
    const start = async (n: number): Promise<number> => {
      const t0 = performance.now();
      await client.startRun({ workflow: 'bench-ten-steps', input: { kind: { case: 'structValue', value: { fields: { n: { kind: { case: 'numberValue', value: n } } } } } } });
      return performance.now() - t0;
    };
    for (let i = 0; i < 5; i++) await start(i); // warm-up: connection, prepared statements
    const alone: number[] = [];
    for (let i = 0; i < calls; i++) alone.push(await start(i));
    const during: number[] = [];
    let resetsDone: number | null = null;
    // The resets come from another process, so this one's event loop measures only the server.
    const resetting = resetFromChild(server.address, resets).then((at) => (resetsDone = at));
    while (resetsDone === null) during.push(await start(during.length));
    await start(0); // the first call sent after the burst
    const answeringAfterMs = Date.now() - (await resetting);
    return {
      resets, aloneP50Ms: percentile(alone, 50), aloneP99Ms: percentile(alone, 99),
      duringP50Ms: percentile(during, 50), duringP99Ms: percentile(during, 99), answeringAfterMs,
    };
  } finally {
    await server.stop();
  }
}

/** Run alone: `node --import tsx bench/reset-streams.ts` (DATABASE_URL, or an embedded PostgreSQL). */
if (import.meta.url === `file://${process.argv[1]}` && process.argv[2] === '--reset') {
  console.log(await resetStreams(process.argv[3]!, Number(process.argv[4])));
  process.exit(0);
} else if (import.meta.url === `file://${process.argv[1]}`) {
  const db = await openBenchDatabase();
  try {
    console.log(JSON.stringify(await measureResetStreams(await db.create('bench_reset_streams'))));
  } finally {
    await db.close();
  }
}
