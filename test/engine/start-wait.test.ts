import { once } from 'node:events';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool } from '../../src/engine/author/tool.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { Registry } from '../../src/engine/registry.js';
import { ReplicaEngine } from '../../src/engine/replica-engine.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import type { ExecuteResult } from '../../src/engine/runtime/execute-result.js';
import type { WaitFor } from '../../src/engine/read/run-wait.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { JournalStore } from '../../src/store/store.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { FakeClock, NS, TTL } from './harness.js';

/*
 * Issue 30: StartRun's wait means what a person expects. With wait_for END (or OUTSIDE_INPUT) the
 * answer comes when the run ends, or parks on an approval or a signal; a timer, a retry backoff, a
 * remote tool call and a child run are internal parks the wait goes through, while the run
 * continues on another replica (B) and the replica that received the call (A) follows its journal.
 * FIRST_PARK (StartRun's original `wait`) still answers at the first park of any kind. Each test
 * below answered SUSPENDED at the first park before the change.
 */

let attempts = 0;
const flaky = defineTool({
  name: 'flaky', description: 'fails its first attempt', input: z.object({}), mutating: false,
  execute: () => {
    attempts += 1;
    if (attempts % 2 === 1) throw new Error('try again');
    return 'ok at last';
  },
});
const backoff = defineWorkflow({ name: 'backoff', input: z.object({}) },
  async (ctx) => ctx.tool(flaky, {}, { retry: { maxAttempts: 2, initialInterval: '1s' } }));
const timer = defineWorkflow({ name: 'timer', input: z.object({}) }, async (ctx) => {
  await ctx.sleep('1s');
  return 'woke';
});
const remote = defineWorkflow({ name: 'remote', input: z.object({}) }, async (ctx) => ctx.tool('add_one', { n: 41 }));
const kid = defineWorkflow({ name: 'kid', input: z.object({}) }, async () => 'from the child');
const parent = defineWorkflow({ name: 'parent', input: z.object({}) }, async (ctx) => ctx.child(kid, {}));
const backoffThenApproval = defineWorkflow({ name: 'backoff-then-approval', input: z.object({}) }, async (ctx) => {
  await ctx.tool(flaky, {}, { retry: { maxAttempts: 2, initialInterval: '1s' } });
  const decision = await ctx.approve({ title: 'Ship it?' });
  return decision.approved;
});
const approval = defineWorkflow({ name: 'approval', input: z.object({}) }, async (ctx) => (await ctx.approve({ title: 'Ship it?' })).approved);
const ITEMS = [flaky, backoff, timer, remote, kid, parent, backoffThenApproval, approval];

const logger = pino({ enabled: false });

/** Replica A receives the calls; replica B continues the run after a park; the sweeper fires due deadlines. */
function replicas(store: JournalStore, clock?: FakeClock) {
  const registry = new Registry().register(...ITEMS);
  const options = { store, registry, leaseTtlMs: TTL, logger, ...(clock ? { clock: clock.now } : {}) };
  const a = new ReplicaEngine({ engine: new RunEngine({ ...options, holder: 'replica-a' }), logger, followPollMs: 50 });
  const b = new ReplicaEngine({ engine: new RunEngine({ ...options, holder: 'replica-b' }), logger, followPollMs: 50 });
  const sweeper = new Sweeper({ store, holder: 'sweeper', intervalMs: 60_000, leaderTtlMs: 5_000, graceMs: 0 });
  const start = (workflowName: string, waitFor: WaitFor, extra: { deadlineMs?: number } = {}) =>
    a.runStart({ namespace: NS, workflowName, input: {}, wait: false, waitFor, ...extra }, new AbortController().signal);
  /** Resolves when A's first execution of a run parks. */
  const parked = async (): Promise<ExecuteResult> => {
    for (;;) {
      const [result] = await once(a.engine.events, 'execution-ended') as [ExecuteResult];
      if (result.outcome === 'suspended') return result;
    }
  };
  return { a, b, sweeper, start, parked };
}

async function statuses(store: JournalStore, runId: string): Promise<string[]> {
  return (await store.journalList({ runId })).filter((e) => e.kind === 'status').map((e) => (e.payload as { status: string }).status);
}

describe('StartRun wait_for, through internal parks (memory store, a clock the test moves)', () => {
  it('END goes through a retry backoff and answers the run that ended', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const t = replicas(store, clock);
    const parked = t.parked();
    const answer = t.start('backoff', 'end');
    const first = await parked;
    expect(first.waitingOn[0]).toMatchObject({ kind: 'tool', name: 'flaky', backoff: expect.anything() });
    clock.advance(2_000);
    await t.sweeper.sweepOnce();
    await t.b.engine.driver.executePending({ namespace: NS });
    const res = await answer;
    expect(res.run).toMatchObject({ status: 'SUCCEEDED', output: 'ok at last' });
    expect(res.waitComplete).toBe(true);
    expect(res.waitingOn).toEqual([]);
    expect(await statuses(store, res.run.id)).toEqual(['RUNNING', 'SUSPENDED', 'RUNNING', 'SUCCEEDED']);
  });

  it('END goes through a timer (ctx.sleep)', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const t = replicas(store, clock);
    const parked = t.parked();
    const answer = t.start('timer', 'end');
    expect((await parked).waitingOn[0]).toMatchObject({ kind: 'sleep' });
    clock.advance(2_000);
    await t.sweeper.sweepOnce();
    await t.b.engine.driver.executePending({ namespace: NS });
    const res = await answer;
    expect(res.run).toMatchObject({ status: 'SUCCEEDED', output: 'woke' });
    expect(res.waitComplete).toBe(true);
  });

  it('OUTSIDE_INPUT goes through a child run', async () => {
    const store = new MemoryStore();
    const t = replicas(store);
    const parked = t.parked();
    const answer = t.start('parent', 'outside_input');
    expect((await parked).waitingOn[0]).toMatchObject({ kind: 'child', name: 'kid' });
    await t.b.engine.driver.executePending({ namespace: NS });
    const res = await answer;
    expect(res.run).toMatchObject({ status: 'SUCCEEDED', output: 'from the child' });
    expect(res.waitComplete).toBe(true);
  });

  it('OUTSIDE_INPUT goes through a backoff and answers SUSPENDED at the approval, with its id', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const t = replicas(store, clock);
    const parked = t.parked();
    const answer = t.start('backoff-then-approval', 'outside_input');
    await parked;
    clock.advance(2_000);
    await t.sweeper.sweepOnce();
    await t.b.engine.driver.executePending({ namespace: NS });
    const res = await answer;
    expect(res.run.status).toBe('SUSPENDED');
    expect(res.waitComplete).toBe(true);
    expect(res.waitingOn).toHaveLength(1);
    expect(res.waitingOn[0]).toMatchObject({ kind: 'approval', title: 'Ship it?', approvalId: `${res.run.id}:${res.waitingOn[0]!.seq}` });
    expect(await statuses(store, res.run.id)).toEqual(['RUNNING', 'SUSPENDED', 'RUNNING', 'SUSPENDED']);
  });

  it('FIRST_PARK keeps StartRun\'s original wait: it answers at the backoff', async () => {
    const store = new MemoryStore({ clock: new FakeClock().now });
    const t = replicas(store);
    const res = await t.start('backoff', 'first_park');
    expect(res.run.status).toBe('SUSPENDED');
    expect(res.waitComplete).toBe(true);
    expect(res.waitingOn[0]).toMatchObject({ kind: 'tool', name: 'flaky', backoff: expect.anything() });
  });

  it('at the call\'s deadline it answers the run as it stands (wait not complete); the run goes on', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const t = replicas(store, clock);
    const res = await t.start('timer', 'end', { deadlineMs: 333.3 });
    expect(res.run.status).toBe('SUSPENDED');
    expect(res.waitComplete).toBe(false);
    expect(res.waitingOn[0]).toMatchObject({ kind: 'sleep' });
    clock.advance(2_000);
    await t.sweeper.sweepOnce();
    await t.b.engine.driver.executePending({ namespace: NS });
    expect((await store.runGet({ runId: res.run.id, namespace: NS })).status).toBe('SUCCEEDED');
    // A repeat with the run's idempotency key would wait again; here it has ended: it answers at once.
  });
});

let db: MigratedDatabase;
let pg: PostgresStore;

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_start_wait');
  pg = await PostgresStore.connect({ url: db.url, applicationName: 'start-wait', poolSize: 6 });
});

afterAll(async () => {
  await pg?.close();
  await db?.drop();
});

describe.each([
  ['memory', () => new MemoryStore() as JournalStore],
  ['postgres', () => pg as JournalStore],
])('StartRun wait_for across replicas (%s)', (_name, makeStore) => {
  it('END goes through a remote tool call completed by a worker through replica B', async () => {
    const store = makeStore();
    const t = replicas(store);
    await t.b.workerRegister({
      namespace: NS, workerId: 'w1', ttlMs: null,
      tools: [{
        name: 'add_one', description: 'n + 1', inputSchema: null, outputSchema: null, mutating: false, policy: 'allow',
        timeoutMs: 60_000, heartbeatTimeoutMs: 30_000, maxAttempts: 1, queue: '',
      }],
    });
    const parked = t.parked();
    const answer = t.start('remote', 'end');
    expect((await parked).waitingOn[0]).toMatchObject({ kind: 'tool', name: 'add_one' });
    const task = await t.b.taskPoll({ namespace: NS, workerId: 'w1', tools: ['add_one'], queue: '', waitMs: 5_000, signal: new AbortController().signal });
    expect(task).not.toBeNull();
    await t.b.taskComplete({ namespace: NS, workerId: 'w1', taskId: task!.id, token: task!.attempt, outcome: { output: 42 } });
    const res = await answer;
    expect(res.run).toMatchObject({ status: 'SUCCEEDED', output: 42 });
    expect(res.waitComplete).toBe(true);
    await t.b.stop({ graceMs: 5_000 });
  });

  it('OUTSIDE_INPUT answers SUSPENDED at an approval; END waits on through it until it is decided on replica B', async () => {
    const store = makeStore();
    const t = replicas(store);
    const atInput = await t.start('approval', 'outside_input');
    expect(atInput.run.status).toBe('SUSPENDED');
    expect(atInput.waitComplete).toBe(true);
    expect(atInput.waitingOn.map((w) => [w.kind, w.title])).toEqual([['approval', 'Ship it?']]);
    const parked = t.parked();
    const answer = t.start('approval', 'end');
    const { waitingOn } = await parked;
    await t.b.approvalDecide({ namespace: NS, approvalId: waitingOn[0]!.approvalId!, approve: true, by: 'ada', requestId: 'r1' });
    const res = await answer;
    expect(res.run).toMatchObject({ status: 'SUCCEEDED', output: true });
    expect(res.waitComplete).toBe(true);
    await t.b.stop({ graceMs: 5_000 });
  });
});
