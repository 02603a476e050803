import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createWaymarkClient, entryStatusName, fromValue, RunStatus, type JournalEntry, type Run, type Schedule, type ScheduleDefinition, type WaymarkClient,
} from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { RestartableServer, startChargeSink } from '../support/restartable-server.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 20's must-show for the Go and Python clients: the refund flow of their READMEs, registered
 * and run by the README's example program (clients/go/examples/refund-flow,
 * clients/python/examples/refund_flow.py; and clients/ts/examples/refund-flow.ts, run plainly)
 * against a real `waymark server`, to completion through its approval. Each language runs it twice: plainly, and with its replica killed (SIGKILL) while
 * the charge_back tool is in flight (the stand-in payment provider holds that charge unanswered;
 * the test kills the server, starts a new one on the same address, and the sweeper hands the run
 * on when its lease expires). The equivalent TypeScript workflow (refund_as_code in workflows.ts) runs the
 * same two ways through the TypeScript client.
 *
 * "The same journal shape" (docs/clients.md "Flows from Go and Python"): the journal entries' kind, name and
 * status in seq order are equal, once the flow's own bookkeeping (the emit entries flow.node and
 * flow.branch, which a code workflow has no counterpart for) is left out; the bookkeeping is
 * checked on its own (each node entered, the branch taken with its condition's result).
 * "Every effect once": one refund per order at the provider, by its Idempotency-Key (the crashed
 * attempt and the redispatch carry the same key), and one charge_back result in the journal.
 *
 * Schedules (issue 36) the same way: the schedules example of each client's README
 * (clients/go/examples/schedule, clients/python/examples/schedule.py; the TypeScript client
 * directly) creates the nightly schedule, moves it to Tokyo time with an update of one value and
 * triggers it; the three stored schedules are equal but for their ids, and each trigger's run
 * starts with the schedule's labels (the sweeper takes it) and succeeds.
 */

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
const pythonAvailable = existsSync(python) && spawnSync(python, ['-c', 'import waymark, yaml'], { stdio: 'ignore' }).status === 0;
/** Short leases, so a run whose replica was killed is recovered within seconds. */
const RECOVERY = { WAYMARK_LEASE_TTL_MS: '1500', WAYMARK_SWEEP_INTERVAL_MS: '250' };

let db: TestDatabase;
let server: RestartableServer;
/** The recovery loop (a server does not run one outside dev): it hands a killed replica's runs on. */
let sweeper: WaymarkProcess;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
let client: WaymarkClient;
let buildDir: string;
let goBinary: string | undefined;
let goSchedule: string | undefined;
/** The shape of refund_as_code's journal, plain and through the crash (the TypeScript test sets them). */
const codeShape: { plain?: string[]; crashed?: string[] } = {};

beforeAll(async () => {
  db = await createTestDatabase('waymark_flow_clients');
  sink = await startChargeSink();
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url, ...RECOVERY });
  sweeper = WaymarkProcess.start(['sweeper'], { env: { DATABASE_URL: db.url, ...RECOVERY } });
  await Promise.all([server.start(), sweeper.waitForLog((l) => l.msg === 'waymark sweeper started')]);
  client = createWaymarkClient({ address: server.address });
  buildDir = mkdtempSync(path.join(tmpdir(), 'waymark-flow-clients-'));
  if (goAvailable) {
    goBinary = path.join(buildDir, 'refund-flow');
    const built = spawnSync('go', ['build', '-o', goBinary, './examples/refund-flow'], { cwd: path.join(root, 'clients', 'go'), encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`go build of the refund-flow example failed:\n${built.stderr}`);
    goSchedule = path.join(buildDir, 'schedule');
    const schedule = spawnSync('go', ['build', '-o', goSchedule, './examples/schedule'], { cwd: path.join(root, 'clients', 'go'), encoding: 'utf8' });
    if (schedule.status !== 0) throw new Error(`go build of the schedule example failed:\n${schedule.stderr}`);
  }
}, 300_000);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await sweeper?.stop();
  await sink?.close();
  await db?.drop();
  if (buildDir) rmSync(buildDir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  output: string;
}

/** Runs an example program (with none of the shell's WAYMARK_* variables) to its end. */
function runProgram(command: string, args: string[], extra: Record<string, string> = {}): Promise<Ran> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('WAYMARK_')) delete env[k];
  Object.assign(env, extra);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** A flow's bookkeeping entries: what a code workflow's journal has no counterpart for. */
function bookkeeping(e: JournalEntry): boolean {
  return (e.kind === 'emit' && e.name.startsWith('flow.')) || e.kind.startsWith('flow');
}

/**
 * The journal's shape: kind, name and status of each entry in seq order, bookkeeping left out, and
 * a status entry that repeats the one before it dropped: each execution that takes a recovered run
 * over journals its start, and how many do (one, or two when a lease lapses again on a loaded
 * machine) is the recovery's timing, not the workflow's shape.
 */
function shape(entries: JournalEntry[]): string[] {
  const lines: string[] = [];
  for (const e of entries) {
    if (bookkeeping(e)) continue;
    const line = `${e.kind} ${e.name} ${entryStatusName(e.status)}`;
    if (e.kind === 'status' && line === lines.at(-1)) continue;
    lines.push(line);
  }
  return lines;
}

async function journalOf(runId: string): Promise<JournalEntry[]> {
  const entries: JournalEntry[] = [];
  for await (const e of client.journal(runId)) entries.push(e);
  return entries;
}

/** The run the examples start for `order` (their idempotency key is `refund-flow-<order>`). */
async function runOf(workflow: string, order: string): Promise<string> {
  const runs = [];
  for await (const run of client.listRuns({ workflow })) {
    if (JSON.stringify(run.input).includes(`"${order}"`)) runs.push(run);
  }
  expect(runs, `one run of ${workflow} for ${order}`).toHaveLength(1);
  expect(runs[0]!.status).toBe(RunStatus.SUCCEEDED);
  return runs[0]!.id;
}

/**
 * Every effect once: one refund at the provider by key, one charge_back result in the journal.
 * `crashed`: the held attempt died with its replica, so the provider also saw the redispatch
 * (at least one more request, with the same key).
 */
function expectOnce(order: string, entries: JournalEntry[], crashed: boolean): void {
  expect(sink.keys.get(order)?.size, `${order}: one Idempotency-Key reached the provider`).toBe(1);
  if (crashed) expect(sink.charges.get(order), `${order}: the crashed attempt and its redispatch`).toBeGreaterThanOrEqual(2);
  else expect(sink.charges.get(order), `${order}: one charge attempt`).toBe(1);
  const results = entries.filter((e) => e.kind === 'tool' && e.name === 'charge_back' && entryStatusName(e.status) === 'OK');
  expect(results, `${order}: one charge_back result in the journal`).toHaveLength(1);
  const approvals = entries.filter((e) => e.kind === 'approval' && entryStatusName(e.status) === 'RESOLVED');
  expect(approvals, `${order}: one approval decision`).toHaveLength(1);
}

/** What the flow itself journals: each node entered in order, the branch taken with its condition's result. */
function expectBookkeeping(entries: JournalEntry[]): void {
  const payload = (e: JournalEntry) => fromValue(e.payload) as Record<string, unknown> | null | undefined;
  const nodes = entries.filter((e) => e.kind === 'emit' && e.name === 'flow.node').map((e) => payload(e)?.node);
  expect([...new Set(nodes)]).toEqual(['approve', 'approved', 'charge', 'refunded']);
  const branch = entries.map(payload).find((p) => p?.type === 'flow.branch');
  expect(branch).toMatchObject({ node: 'approved', taken: 'charge', edges: [{ to: 'charge', condition: 'state.decision.approved', result: true, taken: true }, { to: 'declined', taken: false }] });
}

function skipWithout(available: boolean, what: string, skip: (note?: string) => void): void {
  if (available) return;
  const note = `${what} is not installed; run scripts/setup-clients.sh to run this client's flow`;
  console.warn(`flow-clients.test.ts: skipping: ${note}`);
  skip(note);
}

/**
 * One language's example, plainly then through a SIGKILL of its replica mid-tool; both runs are
 * compared with refund_as_code's journal shape.
 */
async function flowScenario(language: string, command: string, args: (order: string) => string[]): Promise<void> {
  const plain = `${language}-flow-A-1001`;
  const ran = await runProgram(command, args(plain));
  expect(ran.code, `${language} example failed:\n${ran.output}\nserver:\n${server.tail()}`).toBe(0);
  expect(ran.output).toMatch(/^flow refund-flow version 1 [0-9a-f]{64} \(created: (true|True|false|False)\)$/m);
  expect(ran.output).toMatch(/approving: Refund \$42\.5 for order/);
  expect(ran.output).toMatch(/result: .*refunded/);
  const plainJournal = await journalOf(await runOf('refund-flow', plain));
  expect(shape(plainJournal)).toEqual(codeShape.plain);
  expectBookkeeping(plainJournal);
  expectOnce(plain, plainJournal, false);

  const crashed = `${language}-flow-crash-A-1001`;
  const inTool = sink.hold(crashed);
  const program = runProgram(command, args(crashed));
  await inTool;
  await server.restart({ signal: 'SIGKILL' });
  const after = await program;
  expect(after.code, `${language} example failed after the crash:\n${after.output}\nserver:\n${server.tail()}`).toBe(0);
  expect(after.output).toMatch(/result: .*refunded/);
  const crashJournal = await journalOf(await runOf('refund-flow', crashed));
  expect(shape(crashJournal)).toEqual(codeShape.crashed);
  expectBookkeeping(crashJournal);
  expectOnce(crashed, crashJournal, true);
}

describe('a flow registered and run from the Go and Python clients', { timeout: 300_000 }, () => {
  it('TypeScript: refund_as_code, the flow as code, plainly and through a SIGKILL mid-tool', async () => {
    const drive = async (order: string) => {
      const { run } = await client.startRun('refund_as_code', { order, amount: 42.5 });
      const approval = await until(`the approval of ${order}`, async () => {
        for await (const a of client.listApprovals({ runId: run.id })) return a;
        return undefined;
      });
      expect(approval.title).toBe(`Refund $42.5 for order ${order}?`);
      await client.approve(approval.id, { by: 'ana@example.com' });
      return run.id;
    };
    const plain = await drive('ts-code-A-1001');
    expect(await client.result(plain)).toMatchObject({ status: 'refunded' });
    const plainJournal = await journalOf(plain);
    codeShape.plain = shape(plainJournal);
    const parks = ['status RUNNING INFO', 'approval approve SUSPENDED', 'status SUSPENDED INFO', 'approval approve RESOLVED', 'status RUNNING INFO'];
    expect(codeShape.plain).toEqual([...parks, 'tool charge_back RUNNING', 'tool charge_back OK', 'status SUCCEEDED INFO']);
    expectOnce('ts-code-A-1001', plainJournal, false);

    const inTool = sink.hold('ts-code-crash-A-1001');
    const crashed = await drive('ts-code-crash-A-1001');
    await inTool;
    await server.restart({ signal: 'SIGKILL' });
    expect(await client.result(crashed)).toMatchObject({ status: 'refunded' });
    const crashJournal = await journalOf(crashed);
    codeShape.crashed = shape(crashJournal);
    // The recovered execution journals its own start; the intent is redispatched, not written twice.
    expect(codeShape.crashed).toEqual([...parks, 'tool charge_back RUNNING', 'status RUNNING INFO', 'tool charge_back OK', 'status SUCCEEDED INFO']);
    expectOnce('ts-code-crash-A-1001', crashJournal, true);
  });

  it('Go: examples/refund-flow registers the flow from YAML and runs it, plainly and through a SIGKILL mid-tool', async (ctx) => {
    skipWithout(goAvailable, 'Go', ctx.skip);
    expect(codeShape.crashed, 'the TypeScript test runs first and records the shape').toBeDefined();
    await flowScenario('go', goBinary!, (order) => [server.address, order]);
  });

  it('Python: examples/refund_flow.py registers the flow from a dict and runs it, plainly and through a SIGKILL mid-tool', async (ctx) => {
    skipWithout(pythonAvailable, 'The Python virtualenv (.venv with the client)', ctx.skip);
    expect(codeShape.crashed, 'the TypeScript test runs first and records the shape').toBeDefined();
    await flowScenario('py', python, (order) => [path.join(root, 'clients', 'python', 'examples', 'refund_flow.py'), server.address, order]);
  });

  it('TypeScript: clients/ts/examples/refund-flow.ts registers the flow from its JSON and runs it', async () => {
    const ran = await runProgram(process.execPath, ['--import', 'tsx', path.join(root, 'clients', 'ts', 'examples', 'refund-flow.ts')], { WAYMARK_ADDRESS: server.address });
    expect(ran.code, `TypeScript example failed:\n${ran.output}\nserver:\n${server.tail()}`).toBe(0);
    expect(ran.output).toMatch(/^flow refund-flow version 1 [0-9a-f]{64} \(created: (true|false)\)$/m);
    expect(ran.output).toMatch(/result: .*refunded/);
    const journal = await journalOf(await runOf('refund-flow', 'A-1001'));
    expect(shape(journal)).toEqual(codeShape.plain);
    expectBookkeeping(journal);
    expectOnce('A-1001', journal, false);
  });

  it('registers one content once: the Go YAML, the Python dict and the TypeScript JSON are the same flow (one version, one digest)', async () => {
    const versions = [];
    for (const v of (await client.runs.listWorkflows({})).workflows) if (v.name === 'refund-flow') versions.push(v);
    expect(versions).toHaveLength(1);
    expect(versions[0]!.version).toBe('1');
  });
});

/** The examples' nightly schedule, as the TypeScript client writes it (the Go and Python examples write the same). */
const NIGHTLY: ScheduleDefinition = {
  workflow: 'scheduled_echo', input: { note: 'nightly' }, cron: ['0 2 * * *'], timeZone: 'Europe/Berlin', exclude: ['0 2 25 12 *'], jitterMs: 30_000,
  labels: { team: 'payments' }, runTimeoutMs: 3_600_000, overlap: 'BUFFER_ONE', catchupWindowMs: 300_000, pauseOnFailure: true, remainingActions: 100,
};

/** What a client wrote of a schedule: everything but its id, namespace, state and counters. */
function written(s: Schedule): Pick<Schedule, 'spec' | 'action' | 'policies' | 'remainingActions'> {
  return { spec: s.spec, action: s.action, policies: s.policies, remainingActions: s.remainingActions };
}

/** The schedule `id` equals the TypeScript one but for its id; its triggered run has its labels and succeeds; then it is deleted. */
async function expectNightly(id: string): Promise<void> {
  const stored = await client.getSchedule(id);
  expect(stored.spec).toMatchObject({ cron: ['0 2 * * *'], timeZone: 'Asia/Tokyo' });
  expect(written(stored)).toEqual(written(await client.getSchedule('ts-nightly')));
  const runs: Run[] = await until(`the run of ${id}`, async () => {
    const found: Run[] = [];
    for await (const r of client.listRuns({ labels: { 'waymark.schedule_id': id } })) found.push(r);
    return found.length > 0 ? found : undefined;
  });
  expect(runs).toHaveLength(1);
  expect(runs[0]!.labels).toMatchObject({ team: 'payments', 'waymark.schedule_id': id });
  expect(await client.result(runs[0]!.id)).toEqual({ echoed: 'nightly' });
  expect((await client.getSchedule(id)).info!.recentActions.map((a) => a.runId)).toEqual([runs[0]!.id]);
  await client.deleteSchedule(id);
}

describe('the nightly schedule written from TypeScript, Go and Python', { timeout: 300_000 }, () => {
  it('TypeScript: create, move to Tokyo time keeping the rest, trigger', async () => {
    await client.createSchedule('ts-nightly', NIGHTLY);
    await client.updateSchedule('ts-nightly', { timeZone: 'Asia/Tokyo' });
    await client.triggerSchedule('ts-nightly');
    const runs: Run[] = await until('the run of ts-nightly', async () => {
      for await (const r of client.listRuns({ labels: { 'waymark.schedule_id': 'ts-nightly' } })) return [r];
      return undefined;
    });
    expect(await client.result(runs[0]!.id)).toEqual({ echoed: 'nightly' });
  });

  const printed = (id: string) => new RegExp(`^run \\S+ of scheduled_echo started by schedule ${id}, scheduled at \\d{4}-\\d\\d-\\d\\dT\\S+Z, team payments$`, 'm');

  it('Go: examples/schedule writes the same schedule', async (ctx) => {
    skipWithout(goAvailable, 'Go', ctx.skip);
    const ran = await runProgram(goSchedule!, [server.address, 'go-nightly', 'scheduled_echo', JSON.stringify(NIGHTLY.input)]);
    expect(ran.code, `Go schedule example failed:\n${ran.output}\nserver:\n${server.tail()}`).toBe(0);
    expect(ran.output).toMatch(/^schedule go-nightly now ticks \[0 2 \* \* \*\] in Asia\/Tokyo$/m);
    expect(ran.output).toMatch(printed('go-nightly'));
    await expectNightly('go-nightly');
  });

  it('Python: examples/schedule.py writes the same schedule', async (ctx) => {
    skipWithout(pythonAvailable, 'The Python virtualenv (.venv with the client)', ctx.skip);
    const script = path.join(root, 'clients', 'python', 'examples', 'schedule.py');
    const ran = await runProgram(python, [script, server.address, 'py-nightly', 'scheduled_echo', JSON.stringify(NIGHTLY.input)]);
    expect(ran.code, `Python schedule example failed:\n${ran.output}\nserver:\n${server.tail()}`).toBe(0);
    expect(ran.output).toMatch(/^schedule py-nightly now ticks \['0 2 \* \* \*'\] in Asia\/Tokyo$/m);
    expect(ran.output).toMatch(printed('py-nightly'));
    await expectNightly('py-nightly');
  });

  it('TypeScript: the reference schedule is deleted last', async () => {
    await client.deleteSchedule('ts-nightly');
    await expect(client.getSchedule('ts-nightly')).rejects.toThrow(/schedule/i);
  });
});
