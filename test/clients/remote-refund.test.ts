import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createWaymarkClient, EntryStatus, entryStatusName, RunStatus, type JournalEntry, type WaymarkClient } from '../../clients/ts/src/index.js';
import { ToolPolicy, WorkerService } from '../../src/gen/waymark/v1/worker_service_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { RestartableServer, startChargeSink } from '../support/restartable-server.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { buildGoWorkerExample, goAvailable } from './go-worker-example.js';

/*
 * Issue 21's must-show: the refund scenario with `charge_back` served by a worker in another
 * language, as a real process (the Python and Go worker examples, clients/python/examples/worker.py
 * and clients/go/examples/worker), SIGKILLed while it holds the task. The stand-in payment provider
 * behind the workers (startChargeSink) counts the charges and the Idempotency-Keys per order (a
 * provider refunds once per key) and leaves the first charge unanswered, so the first worker is
 * inside the tool when it is killed. A second worker then takes the task (same key) once the first one's claim lapses (the
 * examples declare a 1 s heartbeat timeout), and the run finishes: the provider applied the
 * refund once, saw one key, twice; the journal has one intent and one result of charge_back. The
 * same again with the Waymark server SIGKILLed too while the task is out. A `waymark sweeper` runs
 * beside the server, as in every deployment: the server can be killed while it still holds the
 * run's lease (it dispatched the task, and the first worker charged, before the server wrote the
 * park), and handing a dead holder's runs on is the sweeper's duty (docs/recovery.md "Dead
 * sessions"). Without it that run stayed RUNNING under the dead lease and the test timed out, about
 * one time in ten on a loaded machine.
 */

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const pythonAvailable = existsSync(python) && spawnSync(python, ['-c', 'import waymark'], { stdio: 'ignore' }).status === 0;
const REMOTE_WORKFLOWS = path.resolve('test/clients/remote-workflows.ts');

let db: TestDatabase;
let server: RestartableServer;
let client: WaymarkClient;
let scratch: string;
let goBinary: string | undefined;
let sweeper: WaymarkProcess;

beforeAll(async () => {
  db = await createTestDatabase('waymark_remote_refund');
  server = new RestartableServer({ DATABASE_URL: db.url }, REMOTE_WORKFLOWS);
  await server.start();
  sweeper = WaymarkProcess.start(['sweeper'], { env: { DATABASE_URL: db.url, WAYMARK_METRICS_ADDR: '127.0.0.1:0' } });
  await sweeper.waitForLog((l) => l.msg === 'waymark sweeper started');
  client = createWaymarkClient({ address: server.address });
  scratch = mkdtempSync(path.join(tmpdir(), 'waymark-remote-refund-'));
  goBinary = buildGoWorkerExample(scratch);
}, 300_000);

afterAll(async () => {
  client?.close();
  await sweeper?.stop();
  await server?.stop();
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** A worker process: its output kept for a failing test's message. */
class WorkerProcess {
  output = '';
  readonly exited: Promise<void>;

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (this.output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (this.output += d));
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}

function startWorker(command: string, args: string[], sink: string, extra: NodeJS.ProcessEnv = {}): WorkerProcess {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('WAYMARK_')) delete env[k];
  return new WorkerProcess(spawn(command, [...args, server.address], {
    cwd: root,
    env: { ...env, WAYMARK_EXAMPLE_SINK_URL: sink, WAYMARK_EXAMPLE_HEARTBEAT_TIMEOUT: command === python ? '1' : '1s', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
}

/** Waits until the server lists charge_back with a live worker (a tool never declared is unknown to runs). */
async function servedByALiveWorker(alive: () => boolean, context: () => string): Promise<void> {
  const workers = createClient(WorkerService, createGrpcTransport({ baseUrl: `http://${server.address}` }));
  await until('charge_back served by a live worker', async () => {
    if (!alive()) throw new Error(`the worker exited before it registered\n${context()}`);
    const { tools } = await workers.listTools({});
    return tools.some((t) => t.declaration?.name === 'charge_back' && t.liveWorkers > 0) ? true : undefined;
  }, 60_000, 100);
}

async function approveWhenParked(runId: string): Promise<void> {
  const approval = await until('the refund approval', async () => {
    for await (const a of client.listApprovals({ runId })) return a;
    return undefined;
  });
  await client.approve(approval.id, { by: 'ana@example.com' });
}

interface Worker {
  command: () => string;
  args: string[];
}

/**
 * The scenario for one worker language; with `killServer` the Waymark server is SIGKILLed (and
 * started again on its address) while the killed worker held the task.
 */
async function killedWorkerScenario(language: string, worker: Worker, killServer: boolean): Promise<void> {
  const provider = await startChargeSink();
  const order = `${language}-remote-${killServer ? 'server' : 'worker'}-A-1001`;
  const workers: WorkerProcess[] = [];
  const context = () => `workers:\n${workers.map((w) => w.output.slice(-3000)).join('\n---\n')}\nserver:\n${server.tail()}`;
  try {
    const charged = provider.hold(order);
    let held = false;
    void charged.then(() => (held = true));
    workers.push(startWorker(worker.command(), worker.args, provider.url));
    await servedByALiveWorker(() => workers[0]!.child.exitCode === null, context);
    const { run } = await client.startRun('refund_remote', { order, amount: 42.5 }, { idempotencyKey: `refund-${order}` });
    await approveWhenParked(run.id);

    // The first worker is inside charge_back: the provider has its charge and has not answered.
    await until(`the first charge of ${order}`, async () => {
      if (workers[0]!.child.exitCode !== null) throw new Error(`the first worker exited before it charged\n${context()}`);
      const { run: now } = await client.getRun(run.id);
      if (now.status === RunStatus.FAILED) throw new Error(`the run failed: ${JSON.stringify(now.error)}\n${context()}`);
      return held ? true : undefined;
    }, 120_000, 100);
    const [key] = [...provider.keys.get(order)!];
    await workers[0]!.kill('SIGKILL');
    if (killServer) await server.restart({ signal: 'SIGKILL' });

    workers.push(startWorker(worker.command(), worker.args, provider.url));
    const output = await client.result(run.id, { timeoutMs: 120_000 }).catch((err: unknown) => {
      throw new Error(`the run did not finish: ${String(err)}\n${context()}`);
    });
    expect(output, context()).toMatchObject({ status: 'refunded' });

    // One key, so the provider refunded once; charged by the killed worker and by the one that finished.
    expect([...provider.keys.get(order)!], 'every charge carried the one idempotency key').toEqual([key]);
    expect(provider.charges.get(order), 'charged by the killed worker and by the one that finished').toBe(2);

    const entries: JournalEntry[] = [];
    for await (const e of client.journal(run.id)) entries.push(e);
    const calls = entries.filter((e) => e.kind === 'tool' && e.name === 'charge_back');
    // A remote call journals its intent as a SUSPENDED tool entry and its result as the entry
    // that resolves it (docs/workers.md): exactly those two, whatever happened in between.
    const shown = calls.map((e) => `${e.seq} ${entryStatusName(e.status)} ref ${e.refSeq ?? '-'}`).join('; ');
    expect(calls.map((e) => e.status), `one intent and one result: ${shown}`).toEqual([EntryStatus.SUSPENDED, EntryStatus.RESOLVED]);
    const [intent, result] = calls as [JournalEntry, JournalEntry];
    expect(result.refSeq, shown).toBe(intent.seq);
    expect(intent.idempotencyKey).toBe(key);
  } finally {
    for (const w of workers) await w.kill('SIGTERM');
    await provider.close();
  }
}

function skipWithout(available: boolean, what: string, skip: (note?: string) => void): void {
  if (available) return;
  const note = `${what} is not installed; run scripts/setup-clients.sh to run this worker's scenario`;
  console.warn(`remote-refund.test.ts: skipping: ${note}`);
  skip(note);
}

const PYTHON: Worker = { command: () => python, args: [path.join(root, 'clients', 'python', 'examples', 'worker.py')] };
const GO: Worker = { command: () => goBinary!, args: [] };

describe('the refund scenario with charge_back served by a worker that is SIGKILLed holding the task', { timeout: 300_000 }, () => {
  for (const killServer of [false, true]) {
    const also = killServer ? ', and the Waymark server too' : '';
    it(`Python worker (examples/worker.py)${also}`, async (ctx) => {
      skipWithout(pythonAvailable, 'The Python virtualenv (.venv with the client)', ctx.skip);
      await killedWorkerScenario('py', PYTHON, killServer);
    });

    it(`Go worker (examples/worker)${also}`, async (ctx) => {
      skipWithout(goAvailable, 'Go', ctx.skip);
      await killedWorkerScenario('go', GO, killServer);
    });
  }
});

/*
 * Issue 21's must-show for agents: the model of an agent run (test/clients/remote-workflows.ts,
 * the built-in scripted model) calls charge_back, served by the Python worker example as a real
 * process that declares it `ask` (WAYMARK_EXAMPLE_POLICY). The run parks on the approval with
 * nothing charged; approved over the API, the tool runs once (the provider sees one charge, one
 * key) and the journal has one intent and one result. Last in the file: the latest declaration
 * of a tool wins, and this one is `ask`.
 */
describe('an agent whose model calls a Python-served charge_back with `ask` policy', { timeout: 300_000 }, () => {
  it('parks on the approval, is approved over the API, and the tool runs once', async (ctx) => {
    skipWithout(pythonAvailable, 'The Python virtualenv (.venv with the client)', ctx.skip);
    const provider = await startChargeSink();
    const order = 'py-agent-ask-A-1001';
    const worker = startWorker(PYTHON.command(), PYTHON.args, provider.url, { WAYMARK_EXAMPLE_POLICY: 'ask' });
    const context = () => `worker:\n${worker.output.slice(-3000)}\nserver:\n${server.tail()}`;
    try {
      // Served by this worker, declared `ask` (the latest declaration wins over the earlier tests').
      const workers = createClient(WorkerService, createGrpcTransport({ baseUrl: `http://${server.address}` }));
      await until('charge_back declared ask by a live worker', async () => {
        if (worker.child.exitCode !== null) throw new Error(`the worker exited before it registered\n${context()}`);
        const { tools } = await workers.listTools({});
        return tools.some((t) => t.declaration?.name === 'charge_back' && t.declaration.policy === ToolPolicy.ASK && t.liveWorkers > 0) ? true : undefined;
      }, 60_000, 100);

      const { run } = await client.startRun('refund_agent_remote', { order }, { idempotencyKey: `agent-${order}` });
      const parked = await until('the agent run parks on the approval', async () => {
        const state = await client.getRun(run.id);
        if (state.run.status === RunStatus.FAILED) throw new Error(`the run failed: ${JSON.stringify(state.run.error)}\n${context()}`);
        return state.run.status === RunStatus.SUSPENDED && state.waitingOn.length > 0 ? state : undefined;
      }, 60_000, 100);
      expect(parked.waitingOn.map((w) => [w.kind, w.name]), context()).toEqual([['approval', 'Allow tool "charge_back"?']]);
      const approvals = [];
      for await (const a of client.listApprovals({ runId: run.id })) approvals.push(a);
      expect(approvals.map((a) => a.id)).toEqual([parked.waitingOn[0]!.approvalId]);
      // Parked before the call: the worker has not charged anything.
      expect(provider.charges.get(order), 'nothing charged before the approval').toBeUndefined();

      await client.approve(approvals[0]!.id, { by: 'ana@example.com' });
      const output = await client.result(run.id, { timeoutMs: 120_000 }).catch((err: unknown) => {
        throw new Error(`the run did not finish: ${String(err)}\n${context()}`);
      });
      expect(output, context()).toMatchObject({ calls: ['charge_back'] });
      expect((await client.getRun(run.id)).run.status).toBe(RunStatus.SUCCEEDED);

      // The tool ran once: one charge, with the call's one idempotency key.
      expect(provider.charges.get(order), 'charged once').toBe(1);
      const keys = [...provider.keys.get(order)!];
      expect(keys).toHaveLength(1);
      const entries: JournalEntry[] = [];
      for await (const e of client.journal(run.id)) entries.push(e);
      const calls = entries.filter((e) => e.kind === 'tool' && e.name === 'charge_back');
      const shown = calls.map((e) => `${e.seq} ${entryStatusName(e.status)} ref ${e.refSeq ?? '-'}`).join('; ');
      expect(calls.map((e) => e.status), `one intent and one result: ${shown}`).toEqual([EntryStatus.SUSPENDED, EntryStatus.RESOLVED]);
      expect(calls[1]!.refSeq, shown).toBe(calls[0]!.seq);
      expect(calls[0]!.idempotencyKey).toBe(keys[0]);
    } finally {
      await worker.kill('SIGTERM');
      await provider.close();
    }
  });
});
