import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { buildGoWorkerExample } from './go-worker-example.js';

/*
 * Issue 29 item 15: a worker whose server died exits within its documented shutdown grace (10 s,
 * docs/workers.md "A graceful stop") of SIGTERM, in Go, Python and TypeScript. Real processes: a
 * `waymark server`, the language's worker serving charge_back, a refund_remote run approved so
 * the tool is called. The tool's request to the payment provider (a sink of this test) is held
 * until the server has been SIGKILLed; then the tool returns, and the worker's CompleteTask has no
 * server to reach. SIGTERM: the worker must exit within the grace, plus a few seconds for a
 * process to end on a loaded machine. The worker's log names the tools it serves. Before the fix the Python worker retried CompleteTask for
 * up to 60 s and the Go worker for its retry budget; the TypeScript worker had no grace at all.
 */

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const pythonAvailable = existsSync(python) && spawnSync(python, ['-c', 'import waymark'], { stdio: 'ignore' }).status === 0;
const REMOTE_WORKFLOWS = path.resolve('test/clients/remote-workflows.ts');
/** docs/workers.md: the default shutdown grace of every worker SDK. */
const GRACE_MS = 10_000;
/** What a process may take, past the grace, to end on a busy machine (interpreter teardown). */
const EXIT_ALLOWANCE_MS = 5_000;

let db: TestDatabase;
let scratch: string;
let goBinary: string | undefined;

beforeAll(async () => {
  db = await createTestDatabase('waymark_worker_shutdown');
  scratch = mkdtempSync(path.join(tmpdir(), 'waymark-worker-shutdown-'));
  goBinary = buildGoWorkerExample(scratch);
}, 300_000);

afterAll(async () => {
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A payment provider that holds the first charge until the test releases it. */
async function holdingSink(): Promise<{ url: string; arrived: Promise<void>; release(): void; close(): Promise<void> }> {
  let held: ServerResponse | undefined;
  let onArrival!: () => void;
  const arrived = new Promise<void>((resolve) => (onArrival = resolve));
  const http: Server = createServer((req, res) => {
    req.resume().on('end', () => {
      if (held) return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      held = res;
      onArrival();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/charges`,
    arrived,
    release: () => held?.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
    close: () => new Promise<void>((resolve) => {
      held?.destroy();
      http.close(() => resolve());
    }),
  };
}

/** Resolves with the exit of `child`, or with 'still running' once `ms` passed. */
function exitWithin(child: ChildProcess, exited: Promise<number | null>, ms: number): Promise<number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([exited, new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)))])
    .finally(() => clearTimeout(timer));
}

async function stopsWithinGrace(command: string, args: string[], order: string): Promise<void> {
  const server = WaymarkProcess.start(['server', '--workflows', REMOTE_WORKFLOWS], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0' } });
  const sink = await holdingSink();
  let worker: ChildProcess | undefined;
  let output = '';
  try {
    const address = await server.listening();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('WAYMARK_')) delete env[k];
    worker = spawn(command, [...args, address], { cwd: root, env: { ...env, WAYMARK_EXAMPLE_SINK_URL: sink.url }, stdio: ['ignore', 'pipe', 'pipe'] });
    // Each worker SDK says what it serves when it starts (issue 30 item 8), on stderr by default;
    // the run starts only once the tool is served (a tool nobody declared yet is not dispatched).
    let onRegistered!: () => void;
    const registered = new Promise<boolean>((resolve) => (onRegistered = () => resolve(true)));
    const collect = (d: string): void => {
      output += d;
      if (/registered.*charge_back/.test(output)) onRegistered();
    };
    worker.stdout!.setEncoding('utf8').on('data', collect);
    worker.stderr!.setEncoding('utf8').on('data', collect);
    const exited = new Promise<number | null>((resolve) => worker!.once('exit', (code) => resolve(code)));
    const served = await Promise.race([registered, exited.then(() => false)]);
    expect(served, `the worker exited or logged no line naming the tools it serves; its output:\n${output}`).toBe(true);

    const client = createWaymarkClient({ address });
    try {
      const started = await client.startRun('refund_remote', { order, amount: 7 }, { wait: true, timeoutMs: 60_000 });
      await client.approve(started.waitingOn[0]!.approvalId, { by: 'shutdown-test' });
    } finally {
      client.close();
    }
    await sink.arrived; // the worker is inside the tool
    await server.stop('SIGKILL');
    sink.release(); // the tool returns; its result has no server to go to
    worker.kill('SIGTERM');
    const code = await exitWithin(worker, exited, GRACE_MS + EXIT_ALLOWANCE_MS);
    expect(code, `the worker did not exit within its ${GRACE_MS / 1000} s shutdown grace of SIGTERM; its output:\n${output}`).not.toBe('still running');
  } finally {
    if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    await server.stop('SIGKILL');
    await sink.close();
  }
}

describe('a worker whose server died exits within its shutdown grace of SIGTERM', () => {
  it('Go (clients/go/examples/worker)', { timeout: 180_000 }, async (ctx) => {
    if (!goBinary) return ctx.skip('Go is not installed');
    await stopsWithinGrace(goBinary, [], 'go-shutdown');
  });

  it('Python (clients/python/examples/worker.py)', { timeout: 180_000 }, async (ctx) => {
    if (!pythonAvailable) return ctx.skip('The Python virtualenv (.venv) is missing; run scripts/setup-clients.sh');
    await stopsWithinGrace(python, [path.join(root, 'clients', 'python', 'examples', 'worker.py')], 'py-shutdown');
  });

  it('TypeScript (test/clients/fixtures/charge-worker.ts)', { timeout: 180_000 }, async () => {
    await stopsWithinGrace(process.execPath, ['--import', 'tsx', path.join(root, 'test', 'clients', 'fixtures', 'charge-worker.ts')], 'ts-shutdown');
  });
});
