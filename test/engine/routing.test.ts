import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { WorkflowNotFoundError } from '../../src/journal/errors.js';
import { InvalidInputError } from '../../src/engine/errors.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock, journal, NS, setup } from './harness.js';

/*
 * Routing in the engine (docs/recovery.md "Routing"): a replica claims only runs it can execute,
 * hands back a run it was asked to execute but does not serve, and starts a workflow it lacks for
 * a live replica that serves it. Two engines on one store stand for two replicas; each records what
 * it serves as its server's heartbeat does.
 */

const x1 = defineWorkflow({ name: 'x', input: z.object({ n: z.number() }) }, async (ctx, { n }) => ({ n, on: 'x1', at: await ctx.step('where', async () => 'x1') }));
const x2 = defineWorkflow({ name: 'x', input: z.object({ n: z.number() }) }, async (ctx, { n }) => ({ n, on: 'x2', at: await ctx.step('where', async () => 'x2') }));
const xStrict2 = defineWorkflow({ name: 'x', drift: 'strict', input: z.object({ n: z.number() }) }, async (_ctx, { n }) => ({ n, on: 'x2-strict' }));
const y = defineWorkflow({ name: 'y', input: z.object({ order: z.string().min(1) }) }, async (ctx, { order }) => ({ order, done: await ctx.step('y', async () => true) }));

function replicas(items: { holder: string; workflows: Parameters<typeof setup>[0] }[]) {
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  return items.map(({ holder, workflows }) => setup(workflows, { store, clock, holder }));
}

async function register(...engines: ReturnType<typeof setup>[]) {
  for (const { engine, store } of engines) await store.replicaHeartbeat({ replicaId: engine.holder, workflows: engine.serves(), ttlMs: 60_000 });
}

describe('routing', () => {
  it('StartRun of a workflow this replica lacks is created for the live replica that serves it, which executes it', async () => {
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [x1, y] }]);
    await register(a!, b!);
    const started = await a!.engine.runStart({ namespace: NS, workflowName: 'y', input: { order: 'o-1' }, execute: true });
    expect(started.run).toMatchObject({ status: 'PENDING', workflowName: 'y', workflowDigest: y.digest });
    expect(started.execution).toBeNull();
    expect(await a!.engine.runExecutePending()).toEqual([]);
    const [done] = await b!.engine.runExecutePending();
    expect(done!.run).toMatchObject({ status: 'SUCCEEDED', output: { order: 'o-1', done: true } });
  });

  it("a workflow this replica lacks gets the serving replica's definition timeout, and StartRun's replaces it", async () => {
    const timed = defineWorkflow({ name: 'timed', input: z.object({}), timeout: '45m' }, async () => 'ok');
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [timed] }]);
    await register(a!, b!);
    const span = (run: { deadlineAt: Date | null; createdAt: Date }) => run.deadlineAt!.getTime() - run.createdAt.getTime();
    expect(span((await a!.engine.runStart({ namespace: NS, workflowName: 'timed', input: {} })).run)).toBe(45 * 60_000);
    expect(span((await a!.engine.runStart({ namespace: NS, workflowName: 'timed', input: {}, timeoutMs: 1_000 })).run)).toBe(1_000);
  });

  it("the input is checked against the serving replica's schema; nothing is written for a bad one, or for a workflow nobody serves", async () => {
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [y] }]);
    await register(a!, b!);
    await expect(a!.engine.runStart({ namespace: NS, workflowName: 'y', input: { order: '' } })).rejects.toBeInstanceOf(InvalidInputError);
    await expect(a!.engine.runStart({ namespace: NS, workflowName: 'z', input: {} })).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await b!.store.replicaRemove({ replicaId: 'b' });
    await expect(a!.engine.runStart({ namespace: NS, workflowName: 'y', input: { order: 'o' } })).rejects.toBeInstanceOf(WorkflowNotFoundError);
    expect((await a!.store.runList({ namespace: NS, pageSize: 10 })).runs).toEqual([]);
  });

  it('a replica asked to execute a run it does not serve leaves it PENDING, with nothing journaled, for the replica that does', async () => {
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [y] }]);
    await register(a!, b!);
    const { run } = await b!.engine.runStart({ namespace: NS, workflowName: 'y', input: { order: 'o-2' } });
    expect(await a!.engine.runExecute({ runId: run.id, namespace: NS })).toBeNull();
    expect(await a!.store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'PENDING', leaseEpoch: 0 });
    expect(await journal(a!.store, run.id)).toEqual([]);
    const [done] = await b!.engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect((await journal(b!.store, run.id)).filter((e) => e.kind === 'status' && e.name === 'RUNNING')).toHaveLength(1);
  });

  it('an approval decided through a replica of another version: not taken there (no RUNNING entry), executed once by the replica of its digest', async () => {
    const v1 = defineWorkflow({ name: 'gate', input: z.object({}) }, async (ctx) => {
      const decision = await ctx.approve({ title: 'ok?' });
      return { approved: decision.approved, on: await ctx.step('where', async () => 'v1') };
    });
    const v2 = defineWorkflow({ name: 'gate', input: z.object({}) }, async (ctx) => {
      const decision = await ctx.approve({ title: 'ok?' });
      return { approved: decision.approved, on: await ctx.step('where', async () => 'v2') };
    });
    expect(v1.digest).not.toBe(v2.digest);
    const [a, b] = replicas([{ holder: 'a', workflows: [v1] }, { holder: 'b', workflows: [v2] }]);
    await register(a!, b!);
    const { run, waitingOn } = await a!.engine.runStart({ namespace: NS, workflowName: 'gate', input: {}, execute: true });
    expect(run.status).toBe('SUSPENDED');
    const decided = await b!.engine.approvalDecide({ namespace: NS, approvalId: waitingOn[0]!.approvalId!, approve: true, by: 'ana', requestId: 'r1' }, { take: true });
    expect(decided).toMatchObject({ applied: true, runnable: true, taken: null });
    expect(await b!.engine.runExecute({ runId: run.id, namespace: NS })).toBeNull();
    expect(await b!.engine.runExecutePending()).toEqual([]);
    const [done] = await a!.engine.runExecutePending();
    expect(done!.run).toMatchObject({ status: 'SUCCEEDED', output: { approved: true, on: 'v1' }, workflowDigest: v1.digest });
    const statuses = (await journal(a!.store, run.id)).filter((e) => e.kind === 'status').map((e) => e.name);
    expect(statuses).toEqual(['RUNNING', 'SUSPENDED', 'RUNNING', 'SUCCEEDED']);
  });

  it('two digests of one workflow side by side: each run executes on a replica with its digest', async () => {
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [x2] }]);
    await register(a!, b!);
    expect(x1.digest).not.toBe(x2.digest);
    const old = (await a!.engine.runStart({ namespace: NS, workflowName: 'x', input: { n: 1 } })).run;
    const neu = (await b!.engine.runStart({ namespace: NS, workflowName: 'x', input: { n: 2 } })).run;
    // B claims first, yet gets only the run pinned to its digest.
    const byB = await b!.engine.runExecutePending();
    expect(byB.map((r) => r.runId)).toEqual([neu.id]);
    expect(byB[0]!.run!.output).toMatchObject({ on: 'x2' });
    const byA = await a!.engine.runExecutePending();
    expect(byA.map((r) => r.runId)).toEqual([old.id]);
    expect(byA[0]!.run!.output).toMatchObject({ on: 'x1' });
  });

  it('once no replica serves its digest a run goes to one serving its name: warn continues there, strict fails with FlowDriftError', async () => {
    const [a, warn, strict] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'warn', workflows: [x2] }, { holder: 'strict', workflows: [xStrict2] }]);
    await register(a!, strict!);
    const pinned = (await a!.engine.runStart({ namespace: NS, workflowName: 'x', input: { n: 3 } })).run;
    a!.clock.advance(1); // claims go oldest first
    const other = (await a!.engine.runStart({ namespace: NS, workflowName: 'x', input: { n: 4 } })).run;
    // While the old version's replica lives, the strict replica of the new version leaves them alone.
    expect(await strict!.engine.runExecutePending()).toEqual([]);
    await a!.store.replicaRemove({ replicaId: 'a' }); // the old version's last replica is gone
    await register(warn!);
    const [continued] = await warn!.engine.runExecutePending({ maxRuns: 1 });
    expect(continued).toMatchObject({ runId: pinned.id, run: { status: 'SUCCEEDED', output: { n: 3, on: 'x2' } } });
    // The change is journaled before anything ran on the new code, and the run shows the digest it ran on.
    expect(await warn!.store.runGet({ runId: pinned.id, namespace: NS })).toMatchObject({ workflowDigest: x2.digest });
    const entries = await journal(warn!.store, pinned.id);
    const drift = entries.findIndex((e) => e.kind === 'status' && e.name === 'drift');
    expect(entries[drift]).toMatchObject({ status: 'info', payload: { drift: { from: x1.digest, to: x2.digest, policy: 'warn' } } });
    expect(entries.slice(0, drift).map((e) => e.name)).toEqual(['RUNNING']);
    expect(entries.slice(drift + 1).map((e) => `${e.kind} ${e.name}`)).toEqual(['step where', 'status SUCCEEDED']);
    await a!.store.replicaRemove({ replicaId: 'warn' });
    const [refused] = await strict!.engine.runExecutePending();
    expect(refused).toMatchObject({ runId: other.id, run: { status: 'FAILED', error: { name: 'FlowDriftError' } } });
  });

  it('runs of a workflow no live replica serves are listed as unroutable, never failed', async () => {
    const [a, b] = replicas([{ holder: 'a', workflows: [x1] }, { holder: 'b', workflows: [y] }]);
    await register(a!, b!);
    const { run } = await a!.engine.runStart({ namespace: NS, workflowName: 'y', input: { order: 'o-3' } });
    await b!.store.replicaRemove({ replicaId: 'b' });
    expect(await a!.engine.runExecutePending()).toEqual([]);
    a!.clock.advance(61_000);
    expect((await a!.store.runListUnroutable({ olderThanMs: 60_000, limit: 10 })).map((r) => r.runId)).toEqual([run.id]);
    expect((await a!.store.runGet({ runId: run.id, namespace: NS })).status).toBe('PENDING');
  });
});
