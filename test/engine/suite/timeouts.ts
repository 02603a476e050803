import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import { ChildRunFailedError, defineTool, defineWorkflow, DefinitionError, LeaseLostError, RunTimedOutError } from '../../../src/index.js';
import { RunEngine } from '../../../src/engine/run-engine.js';
import { Registry } from '../../../src/engine/registry.js';
import { runTimedOutRecord } from '../../../src/engine/runtime/run-ending.js';
import type { JournalEntry } from '../../../src/journal/journal-entry.js';
import type { Run } from '../../../src/journal/run.js';
import type { JournalStore } from '../../../src/store/store.js';
import { Sweeper } from '../../../src/sweeper/sweeper.js';
import { until } from '../../support/until.js';
import { NS, TTL } from '../harness.js';
import { deferred, type Suite } from './support.js';

/*
 * The run timeout (docs/workflows.md "Timeouts"): the deadline is in the run row, the sweeper fails
 * a run past it whoever executes it (or nobody), and the replica executing it fails it at the
 * deadline itself. Time passes by `env.advance` (a moved clock or backdated rows), never a sleep,
 * except where the executing replica's own timer is the subject.
 */

const TIMED_OUT = { name: 'RunTimedOutError', reason: 'run_timed_out' };

/** A sweeper for this test; stopped after it, which gives its leader lease up for the next test's. */
function sweeperOf(store: JournalStore): Sweeper {
  const sweeper = new Sweeper({ store, holder: 'sweeper-1', intervalMs: 60_000, leaderTtlMs: 60_000, graceMs: 0 });
  onTestFinished(() => sweeper.stop());
  return sweeper;
}

/** A tool that never returns on its own: it settles only when its AbortSignal fires, recording why. */
function hangingTool(name: string) {
  const started = deferred();
  const seen: { reason: unknown; calls: number } = { reason: null, calls: 0 };
  const tool = defineTool({
    name, description: 'waits for its AbortSignal', input: z.object({}), retry: { maxAttempts: 1 },
    execute: (_a, { signal }) => new Promise<never>((_resolve, reject) => {
      seen.calls++;
      signal.addEventListener('abort', () => {
        seen.reason = signal.reason;
        reject(signal.reason as Error);
      }, { once: true });
      started.resolve();
    }),
  });
  return { tool, started: started.promise, seen };
}

const last = (entries: JournalEntry[]) => entries[entries.length - 1]!;

export function timeoutsSuite(suite: Suite): void {
  const { env, setup, entriesOf } = suite;

  describe(`${suite.label}: run timeouts`, () => {
    it('the deadline is fixed at creation: StartRun\'s timeout replaces the definition\'s, which applies otherwise; none without either', async () => {
      const timed = defineWorkflow({ name: 'timed', input: z.object({}), timeout: '10m' }, async () => 'ok');
      const plain = defineWorkflow({ name: 'plain', input: z.object({}) }, async () => 'ok');
      const { engine } = await setup([timed, plain]);
      const span = (run: Run) => run.deadlineAt!.getTime() - run.createdAt.getTime();
      expect(span((await engine.runStart({ namespace: NS, workflowName: 'timed', input: {} })).run)).toBe(600_000);
      expect(span((await engine.runStart({ namespace: NS, workflowName: 'timed', input: {}, timeoutMs: 5_000 })).run)).toBe(5_000);
      expect(span((await engine.runStart({ namespace: NS, workflowName: 'timed', input: {}, timeoutMs: 3_600_000 })).run)).toBe(3_600_000);
      expect(span((await engine.runStart({ namespace: NS, workflowName: 'plain', input: {}, timeoutMs: 2_000 })).run)).toBe(2_000);
      expect((await engine.runStart({ namespace: NS, workflowName: 'plain', input: {} })).run.deadlineAt).toBeNull();
      expect(engine.serves().find((w) => w.name === 'timed')!.timeoutMs).toBe(600_000);
      for (const timeout of [0, -5, 'forever', '3651d']) {
        expect(() => defineWorkflow({ name: 'bad', input: z.object({}), timeout }, async () => null)).toThrow(DefinitionError);
      }
      expect(defineWorkflow({ name: 'max', input: z.object({}), timeout: '3650d' }, async () => null).timeoutMs).toBe(3650 * 86_400_000);
    });

    it('a parked run past its deadline: the sweeper fails it with RunTimedOutError (GetRun, terminal entry) and cancels its children', async () => {
      const kid = defineWorkflow({ name: 'kid', input: z.object({}) }, async (ctx) => ctx.signal('go'));
      const parent = defineWorkflow({ name: 'parent', input: z.object({}) }, async (ctx) => ctx.child(kid, {}));
      const { engine, store, clock } = await setup([kid, parent]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'parent', input: {}, timeoutMs: 60_000, execute: true });
      expect(run.status).toBe('SUSPENDED');
      await engine.runExecutePending();
      const [child] = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(child!.status).toBe('SUSPENDED');
      const sweeper = sweeperOf(store);
      expect((await sweeper.sweepOnce()).timedOut).toEqual([]);

      await env.advance(clock, 60_001);
      const report = await sweeper.sweepOnce();
      expect(report.timedOut).toEqual([run.id]);
      expect(report.timedOutChildrenCancelled).toBe(1);
      const failed = await store.runGet({ runId: run.id, namespace: NS });
      // (On PostgreSQL `advance` backdated the row's deadline: the error names the row's.)
      expect(failed).toMatchObject({ status: 'FAILED', error: { ...TIMED_OUT, details: { deadline: failed.deadlineAt!.toISOString() } } });
      expect(failed.error!.message).toContain('did not finish before its deadline');
      expect(last(await entriesOf(store, run.id))).toMatchObject({ kind: 'status', name: 'FAILED', payload: { error: TIMED_OUT } });
      expect(await store.runGet({ runId: child!.id, namespace: NS })).toMatchObject({
        status: 'CANCELLED', error: { name: 'RunCancelledError', reason: 'cancelled', message: 'its parent run timed out' },
      });
      // Once failed it is not listed again.
      expect((await sweeper.sweepOnce()).timedOut).toEqual([]);
    });

    it('a child\'s own timeout fails the child; its parent receives ChildRunFailedError with the reason and may catch it', async () => {
      const kid = defineWorkflow({ name: 'slow-kid', input: z.object({}), timeout: '10s' }, async (ctx) => ctx.signal('go'));
      const parent = defineWorkflow({ name: 'patient', input: z.object({}) }, async (ctx) => {
        try {
          return await ctx.child(kid, {});
        } catch (err) {
          if (err instanceof ChildRunFailedError) return `child ${err.status}: ${err.childError?.reason}`;
          throw err;
        }
      });
      const { engine, store, clock } = await setup([kid, parent]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'patient', input: {}, execute: true });
      expect(run.deadlineAt).toBeNull();
      const sweeper = sweeperOf(store);
      await engine.runExecutePending();
      const [child] = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(child!.deadlineAt!.getTime() - child!.createdAt.getTime()).toBe(10_000);
      await env.advance(clock, 10_001);
      expect((await sweeper.sweepOnce()).timedOut).toEqual([child!.id]);
      await engine.runExecutePending();
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'SUCCEEDED', output: 'child FAILED: run_timed_out' });
    });

    it('a run claimed past its deadline (before any sweep) fails unexecuted, and so does a resume of it', async () => {
      let bodies = 0;
      const wf = defineWorkflow({ name: 'late', input: z.object({}) }, async () => ++bodies);
      const { engine, store, clock } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'late', input: {}, timeoutMs: 1_000 });
      await env.advance(clock, 1_001);
      const [result] = await engine.runExecutePending();
      expect(result).toMatchObject({ runId: run.id, outcome: 'failed', error: TIMED_OUT });
      expect(bodies).toBe(0);
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'FAILED', error: TIMED_OUT });
      // The deadline spans the whole run: a resume past it fails again at once, still unexecuted.
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.execution).toMatchObject({ outcome: 'failed', error: TIMED_OUT });
      expect(bodies).toBe(0);
    });

    it('the sweeper times out a run another replica is executing: its lease is fenced, the in-flight tool\'s AbortSignal fires, no later effect runs', async () => {
      const hang = hangingTool('hang');
      let after = 0;
      const wf = defineWorkflow({ name: 'busy', input: z.object({}) }, async (ctx) => {
        await ctx.tool(hang.tool, {});
        await ctx.step('after', () => ++after);
        return 'done';
      });
      const { store, clock } = await setup([wf, hang.tool]);
      // Renewals every 20 ms: how soon the executing replica learns it lost the run.
      const engine = new RunEngine({
        store, registry: new Registry().register(wf, hang.tool), holder: 'replica-a', leaseTtlMs: TTL, renewEveryMs: 20,
        ...(env.fakeClock ? { clock: clock.now } : {}),
      });
      const executing = engine.runStart({ namespace: NS, workflowName: 'busy', input: {}, timeoutMs: 3_600_000, execute: true });
      await hang.started;
      await env.advance(clock, 3_600_001);
      const [runId] = (await sweeperOf(store).sweepOnce()).timedOut;
      const { execution } = await executing;
      expect(execution).toMatchObject({ runId, outcome: 'lease_lost' });
      await until('the tool saw its AbortSignal fire', () => (hang.seen.reason !== null ? true : undefined));
      expect(hang.seen.reason).toBeInstanceOf(LeaseLostError);
      expect(hang.seen.calls).toBe(1);
      expect(after).toBe(0);
      expect(await store.runGet({ runId: runId!, namespace: NS })).toMatchObject({ status: 'FAILED', error: TIMED_OUT });
      expect(last(await entriesOf(store, runId!))).toMatchObject({ kind: 'status', name: 'FAILED' });
    });

    it('the replica executing a run fails it at the deadline itself (no sweeper): the tool\'s AbortSignal fires with RunTimedOutError, children are cancelled', async () => {
      const hang = hangingTool('hang-2');
      const kid = defineWorkflow({ name: 'idle-kid', input: z.object({}) }, async (ctx) => ctx.signal('go'));
      const wf = defineWorkflow({ name: 'hurried', input: z.object({}) }, async (ctx) => {
        await ctx.parallel([(c) => c.child(kid, {}), (c) => c.tool(hang.tool, {})]);
        return 'done';
      });
      const { engine, store, clock } = await setup([wf, kid, hang.tool]);
      // A real timer is the subject here: 300 ms of real time (the fake clock is moved too, for the memory store).
      const executing = engine.runStart({ namespace: NS, workflowName: 'hurried', input: {}, timeoutMs: 300, execute: true });
      await hang.started;
      await env.advance(clock, 301);
      const { run, execution } = await executing;
      expect(execution).toMatchObject({ outcome: 'failed', error: TIMED_OUT });
      expect(hang.seen.reason).toBeInstanceOf(RunTimedOutError);
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'FAILED', error: TIMED_OUT });
      const children = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(children.map((c) => [c.status, c.error?.message])).toEqual([['CANCELLED', 'its parent run timed out']]);
      expect((await sweeperOf(store).sweepOnce()).timedOut).toEqual([]);
    });

    it('a child left behind by a timed-out parent (the cascade stopped half-way) is cancelled by the orphan duty, not failed', async () => {
      const kid = defineWorkflow({ name: 'left-kid', input: z.object({}) }, async (ctx) => ctx.signal('go'));
      const parent = defineWorkflow({ name: 'left-parent', input: z.object({}) }, async (ctx) => ctx.child(kid, {}));
      const { engine, store } = await setup([kid, parent]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'left-parent', input: {}, timeoutMs: 60_000, execute: true });
      // The parent failed for its timeout, and nothing cancelled the child (a crash in between).
      await store.runStatusForce({ runId: run.id, status: 'FAILED', error: runTimedOutRecord(run) });
      const report = await sweeperOf(store).sweepOnce();
      expect(report.childrenCancelled).toBe(1);
      const [child] = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(child).toMatchObject({ status: 'CANCELLED', error: { reason: 'cancelled', message: 'its parent run timed out' } });
    });
  });
}
