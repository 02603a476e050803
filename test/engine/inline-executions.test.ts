import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { InlineExecutions } from '../../src/engine/scheduling/inline-executions.js';
import { NS, setup } from './harness.js';
import { deferred } from './suite/support.js';

/*
 * The API's inline executions on shutdown: after the grace period they abort what they execute
 * themselves, release a lease only once that execution settled (its effect returned), and never
 * touch the leases of runs the executor of the same process executes.
 */
type Gate = { started: ReturnType<typeof deferred<void>>; aborted: ReturnType<typeof deferred<void>>; settle: ReturnType<typeof deferred<void>> };
const gates = new Map<string, Gate>();
const gate = (): Gate => ({ started: deferred<void>(), aborted: deferred<void>(), settle: deferred<void>() });
const lingering = defineWorkflow({ name: 'lingering', input: z.object({ key: z.string() }) }, async (ctx, { key }) => {
  return ctx.step('work', async ({ signal }) => {
    const g = gates.get(key)!;
    signal.addEventListener('abort', () => g.aborted.resolve());
    g.started.resolve();
    await g.settle.promise;
    return key;
  });
});

describe('InlineExecutions.stop', () => {
  it('aborts only its own executions and releases each lease once its effect settled; the executor\'s run is left alone', async () => {
    const { engine, store } = setup([lingering]);
    const inline = new InlineExecutions({ driver: engine.driver, logger: pino({ enabled: false }), settleMs: 3_600_000 });
    const own = gate();
    const theirs = gate();
    gates.set('own', own);
    gates.set('theirs', theirs);

    // A run the executor executes (claimed and run outside InlineExecutions).
    const { run: other } = await engine.runStart({ namespace: NS, workflowName: 'lingering', input: { key: 'theirs' } });
    const [lease] = await store.runClaim({ holder: engine.holder, ttlMs: 30_000, limit: 1, namespace: NS });
    const executorRun = engine.runExecute({ lease: lease! });
    await theirs.started.promise;

    // A run StartRun with `wait` executes here.
    const started = inline.track(() => engine.runStart({ namespace: NS, workflowName: 'lingering', input: { key: 'own' }, execute: true }));
    await own.started.promise;
    expect(inline.leasesHeld).toBe(1);

    const stopping = inline.stop({ graceMs: 0 });
    await own.aborted.promise;
    // Aborted, but its effect still runs: the lease is kept until it returns.
    const ownRunId = (await store.runList({ namespace: NS, pageSize: 10, cursor: null })).runs.find((r) => r.id !== other.id)!.id;
    expect((await store.runGet({ runId: ownRunId, namespace: NS })).status).toBe('RUNNING');
    own.settle.resolve();
    expect(await stopping).toEqual({ released: [ownRunId], unsettled: [] });
    expect((await store.runGet({ runId: ownRunId, namespace: NS })).status).toBe('PENDING');
    expect((await started).execution?.outcome).toBe('aborted');

    // The executor's run was neither aborted nor released: it finishes normally.
    theirs.settle.resolve();
    expect((await executorRun)!.outcome).toBe('succeeded');
  });

  it('keeps the lease of an aborted execution whose effect does not settle in time', async () => {
    const { engine, store } = setup([lingering]);
    const inline = new InlineExecutions({ driver: engine.driver, logger: pino({ enabled: false }), settleMs: 0 });
    const g = gate();
    gates.set('stuck', g);
    const started = inline.track(() => engine.runStart({ namespace: NS, workflowName: 'lingering', input: { key: 'stuck' }, execute: true }));
    await g.started.promise;
    const { released, unsettled } = await inline.stop({ graceMs: 0 });
    expect(released).toEqual([]);
    expect(unsettled).toHaveLength(1);
    expect((await store.runGet({ runId: unsettled[0]!, namespace: NS })).status).toBe('RUNNING');
    g.settle.resolve();
    await started;
  });
});
