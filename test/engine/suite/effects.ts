import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineTool, defineWorkflow, EffectFailedError, InvalidInputError, ToolApprovalDeniedError,
} from '../../../src/index.js';
import type { JournalStore } from '../../../src/store/store.js';
import { EffectSink, FakeClock, NS, shape } from '../harness.js';
import { deferred, type Suite } from './support.js';

/** Starting runs, effects and tool policies. */
export function effectsSuite(suite: Suite): void {
  const { env, setup, entriesOf } = suite;
  describe(`${suite.label}: starting runs`, () => {
    const wf = defineWorkflow({ name: 'add', input: z.object({ a: z.number(), b: z.number() }), output: z.number() }, async (ctx, { a, b }) =>
      ctx.step('sum', () => a + b));

    it('an invalid input is refused with field violations and nothing is written', async () => {
      const { engine, store } = await setup([wf]);
      const err = await engine.runStart({ namespace: NS, workflowName: 'add', input: { a: 'x' }, execute: true }).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidInputError);
      expect(err.violations.map((v: { field: string }) => v.field).sort()).toEqual(['a', 'b']);
      expect((await store.runList({ namespace: NS, pageSize: 10 })).runs).toEqual([]);
    });

    it('execute: true drives the run to its end here; the journal opens with the RUNNING event', async () => {
      const { engine, store } = await setup([wf]);
      const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'add', input: { a: 2, b: 3 }, execute: true });
      expect(execution?.outcome).toBe('succeeded');
      expect(run.status).toBe('SUCCEEDED');
      expect(run.output).toBe(5);
      const entries = await entriesOf(store, run.id);
      expect(entries.map((e) => `${e.status} ${e.kind} ${e.name}`)).toEqual(['info status RUNNING', 'ok step sum', 'info status SUCCEEDED']); // a step is one write
    });

    it('without execute the run is PENDING for an executor; a repeated idempotency key returns the first run', async () => {
      const { engine } = await setup([wf]);
      const first = await engine.runStart({ namespace: NS, workflowName: 'add', input: { a: 1, b: 1 }, idempotencyKey: 'k1' });
      expect(first.run.status).toBe('PENDING');
      const again = await engine.runStart({ namespace: NS, workflowName: 'add', input: { a: 1, b: 1 }, idempotencyKey: 'k1', execute: true });
      expect(again.created).toBe(false);
      expect(again.run.id).toBe(first.run.id);
      const results = await engine.runExecutePending();
      expect(results.map((r) => [r.runId, r.outcome])).toEqual([[first.run.id, 'succeeded']]);
    });

    it('an output failing the output schema fails the run with InvalidOutputError', async () => {
      const bad = defineWorkflow({ name: 'bad-output', input: z.object({}), output: z.string() }, async () => 42 as unknown as string);
      const { engine } = await setup([bad]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'bad-output', input: {}, execute: true });
      expect(run.status).toBe('FAILED');
      expect(run.error).toMatchObject({ name: 'InvalidOutputError', reason: 'invalid_output' });
    });
  });
  describe(`${suite.label}: effects`, () => {
    it('a mutating tool commits its intent before it executes, and gets the intent\'s idempotency key', async () => {
      const sink = new EffectSink();
      const ref: { store?: JournalStore } = {};
      const charge = defineTool({
        name: 'charge', description: 'charges a card', input: z.object({ amount: z.number() }),
        async execute(args, { idempotencyKey, runId }) {
          const entries = await ref.store!.journalList({ runId });
          const intent = entries.find((e) => e.kind === 'tool' && e.status === 'running');
          expect(intent?.idempotencyKey).toBe(idempotencyKey);
          expect(intent?.payload).toEqual({ amount: 5 });
          sink.deliver('charge', idempotencyKey);
          return { charged: args.amount };
        },
      });
      const wf = defineWorkflow({ name: 'pay', input: z.object({}) }, async (ctx) => ctx.tool(charge, { amount: 5 }));
      const env = await setup([wf, charge]);
      const store = (ref.store = env.store);
      const { run } = await env.engine.runStart({ namespace: NS, workflowName: 'pay', input: {}, execute: true });
      expect(run.output).toEqual({ charged: 5 });
      expect(sink.count('charge')).toBe(1);
      const entries = await entriesOf(store, run.id);
      expect(shape(entries)).toEqual(['running tool charge', 'ok tool charge']);
      expect(entries.find((e) => e.status === 'ok')!.refSeq).toBe(entries.find((e) => e.status === 'running')!.seq);
    });

    it('a read-only tool writes one entry; tools are found by name too; bad arguments throw InvalidInputError', async () => {
      const lookup = defineTool({ name: 'lookup', description: 'reads', input: z.object({ q: z.string() }), mutating: false, execute: ({ q }) => `found ${q}` });
      const wf = defineWorkflow({ name: 'read', input: z.object({}) }, async (ctx) => {
        const found = await ctx.tool('lookup', { q: 'x' });
        const err: unknown = await ctx.tool('lookup', { q: 1 }).catch((e: unknown) => e);
        return { found, invalid: err instanceof InvalidInputError, field: (err as InvalidInputError).violations[0]!.field };
      });
      const { engine, store } = await setup([wf, lookup]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'read', input: {}, execute: true });
      expect(run.output).toEqual({ found: 'found x', invalid: true, field: 'q' });
      expect(shape(await entriesOf(store, run.id))).toEqual(['ok tool lookup']);
    });

    it('a failed step is recorded and thrown as EffectFailedError, the same on the first run and on replay', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'catches', input: z.object({}) }, async (ctx) => {
        const seen = await ctx.step('flaky', () => { calls++; throw new TypeError('no such thing'); }).catch((e) => e);
        await ctx.approve({ title: 'continue?' });
        return { isEffectError: seen instanceof EffectFailedError, errorName: seen.errorName, message: seen.errorMessage };
      });
      const { engine, store } = await setup([wf]);
      const started = await engine.runStart({ namespace: NS, workflowName: 'catches', input: {}, execute: true });
      await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'r' });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toEqual({ isEffectError: true, errorName: 'TypeError', message: 'no such thing' });
      expect(calls).toBe(1); // the code moved on after the error, so replay re-throws it instead of rerunning
      const error = (await entriesOf(store, started.run.id)).find((e) => e.status === 'error')!;
      expect(error.error).toEqual({ name: 'TypeError', message: 'no such thing' });
    });

    it('an error the run died on is retried by a resume, with the same idempotency key', async () => {
      let fail = true;
      const keys: string[] = [];
      const wf = defineWorkflow({ name: 'dies', input: z.object({}) }, async (ctx) => {
        await ctx.step('ok-first', () => 1);
        return ctx.step('fragile', ({ idempotencyKey }) => {
          keys.push(idempotencyKey);
          if (fail) throw new Error('downstream unavailable');
          return 'fine';
        });
      });
      const { engine } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'dies', input: {}, execute: true });
      expect(run.status).toBe('FAILED');
      expect(run.error).toMatchObject({ name: 'Error', message: 'downstream unavailable' });
      const preview = await engine.runPreview({ runId: run.id, namespace: NS });
      expect(preview).toMatchObject({ hits: 1, reruns: 1, misses: 0, outcome: 'live_call' });
      fail = false;
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUCCEEDED');
      expect(resumed.run.output).toBe('fine');
      expect(keys).toHaveLength(2);
      expect(keys[0]).toBe(keys[1]);
    });

    it('now, uuid and step results replay unchanged after a park, whatever the clock says later', async () => {
      const wf = defineWorkflow({ name: 'stable', input: z.object({}) }, async (ctx) => {
        const t = await ctx.now();
        const id = await ctx.uuid();
        const nothing = await ctx.step('returns-nothing', () => undefined);
        const date = await ctx.step('returns-a-date', () => new Date('2031-02-03T04:05:06Z'));
        await ctx.signal('go');
        return { t: t.toISOString(), id, nothing, date };
      });
      const clock = new FakeClock();
      const { engine } = await setup([wf], { clock });
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'stable', input: {}, execute: true });
      clock.advance(3_600_000);
      await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: null, signalId: 's' });
      const [done] = await engine.runExecutePending();
      const out = done!.run!.output as Record<string, unknown>;
      if (env.fakeClock) expect(out.t).toBe('2030-01-01T00:00:00.000Z');
      expect(out.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(out.nothing).toBeNull();
      expect(out.date).toBe('2031-02-03T04:05:06.000Z'); // JSON on the first run as on replay
    });

    it('emit journals an info entry once', async () => {
      const wf = defineWorkflow({ name: 'emits', input: z.object({}) }, async (ctx) => {
        await ctx.emit({ type: 'progress', pct: 50 });
        await ctx.signal('go');
        return 'done';
      });
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'emits', input: {}, execute: true });
      await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: 1, signalId: 's' });
      await engine.runExecutePending();
      const emits = (await entriesOf(store, run.id)).filter((e) => e.kind === 'emit');
      expect(emits).toMatchObject([{ status: 'info', name: 'progress', payload: { type: 'progress', pct: 50 } }]);
    });

    it('parallel branches and Promise.all keep their identities however calls interleave', async () => {
      const order: string[] = [];
      const gate = deferred();
      const wf = defineWorkflow({ name: 'fan', input: z.object({}) }, async (ctx) => {
        const [x, y] = await ctx.parallel([
          async (b) => { await gate.promise; return b.step('work', () => { order.push('x'); return 'x'; }); },
          async (b) => b.step('work', () => { order.push('y'); gate.resolve(); return 'y'; }),
        ]);
        const [p, q] = await Promise.all([ctx.step('same', () => 'p'), ctx.step('same', () => 'q')]);
        await ctx.signal('go');
        return [x, y, p, q];
      });
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'fan', input: {}, execute: true });
      const entries = await entriesOf(store, run.id);
      expect(shape(entries).filter((s) => s.startsWith('ok'))).toEqual(['ok step work @par:0:1', 'ok step work @par:0:0', 'ok step same', 'ok step same']);
      expect(entries.filter((e) => e.name === 'same' && e.status === 'ok').map((e) => e.occurrence).sort()).toEqual([0, 1]);
      await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: null, signalId: 's' });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toEqual(['x', 'y', 'p', 'q']);
      expect(order).toEqual(['y', 'x']); // nothing ran twice on replay
    });

    it('dry run: mutating tools return the marker without executing; read-only ones run', async () => {
      const sink = new EffectSink();
      const write = defineTool({ name: 'write', description: 'w', input: z.object({}), execute: (_a, { idempotencyKey }) => { sink.deliver('write', idempotencyKey); return 'written'; } });
      const read = defineTool({ name: 'read', description: 'r', input: z.object({}), mutating: false, execute: () => 'read' });
      const wf = defineWorkflow({ name: 'dry', input: z.object({}) }, async (ctx) => ({ dry: ctx.dryRun, w: await ctx.tool(write, {}), r: await ctx.tool(read, {}) }));
      const { engine } = await setup([wf, write, read]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'dry', input: {}, dryRun: true, execute: true });
      expect(run.output).toEqual({ dry: true, w: { __dryRun: true, tool: 'write' }, r: 'read' });
      expect(sink.count('write')).toBe(0);
    });
  });
  describe(`${suite.label}: tool policies`, () => {
    const sink = new EffectSink();
    const wipe = defineTool({ name: 'wipe', description: 'deletes everything', input: z.object({ what: z.string() }), policy: 'ask',
      execute: ({ what }, { idempotencyKey }) => { sink.deliver(`wipe ${what}`, idempotencyKey); return `wiped ${what}`; } });
    const nuke = defineTool({ name: 'nuke', description: 'never', input: z.object({}), policy: 'deny', execute: () => { sink.deliver('nuke', ''); return 1; } });
    const wf = defineWorkflow({ name: 'careful', input: z.object({ what: z.string() }) }, async (ctx, { what }) => {
      const denied = await ctx.tool(nuke, {}).catch((e) => e);
      try {
        return { wiped: await ctx.tool(wipe, { what }), policyDenied: denied instanceof ToolApprovalDeniedError };
      } catch (e) {
        if (e instanceof ToolApprovalDeniedError) return { deniedBy: e.deniedBy, comment: e.comment };
        throw e;
      }
    });

    it('deny throws ToolApprovalDeniedError without executing; ask parks, and an approval lets it run once', async () => {
      const { engine } = await setup([wf, wipe, nuke]);
      const started = await engine.runStart({ namespace: NS, workflowName: 'careful', input: { what: 'db' }, execute: true });
      expect(started.run.status).toBe('SUSPENDED');
      expect(started.waitingOn).toMatchObject([{ kind: 'approval', name: 'tool:wipe', title: 'Allow tool "wipe"?' }]);
      expect(sink.count('wipe db')).toBe(0);
      await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ops', requestId: 'r1' });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toEqual({ wiped: 'wiped db', policyDenied: true });
      expect(sink.count('wipe db')).toBe(1);
      expect(sink.count('nuke')).toBe(0);
    });

    it('a denied approval makes ctx.tool throw ToolApprovalDeniedError, and the tool never runs', async () => {
      const { engine } = await setup([wf, wipe, nuke]);
      const started = await engine.runStart({ namespace: NS, workflowName: 'careful', input: { what: 'prod' }, execute: true });
      await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: false, by: 'ops', comment: 'not today', requestId: 'r1' });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toEqual({ deniedBy: 'ops', comment: 'not today' });
      expect(sink.count('wipe prod')).toBe(0);
    });
  });
}
