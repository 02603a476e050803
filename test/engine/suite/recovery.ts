import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineWorkflow, FlowDriftError, LeaseLostError, RunStateError } from '../../../src/index.js';
import { journalReadAll } from '../../../src/engine/runtime/journal-read.js';
import { EffectSink, FakeClock, NS, shape, TTL } from '../harness.js';
import { deferred, type Suite } from './support.js';

/** Previews, resumes, invalidation, drift, and what leases guarantee. */
export function recoverySuite(suite: Suite): void {
  const { env, setup, entriesOf } = suite;
  describe(`${suite.label}: previews, resumes and drift`, () => {
    const sink = new EffectSink();
    const v1 = defineWorkflow({ name: 'evolving', input: z.object({}) }, async (ctx) => {
      const a = await ctx.step('a', ({ idempotencyKey }) => { sink.deliver('a', idempotencyKey); return 'a'; });
      const b = await ctx.step('b', ({ idempotencyKey }) => { sink.deliver('b', idempotencyKey); return 'b'; });
      const d = await ctx.approve({ title: 'ship?' });
      return [a, b, d.approved];
    });
    const v2 = defineWorkflow({ name: 'evolving', input: z.object({}) }, async (ctx) => {
      const a = await ctx.step('a', ({ idempotencyKey }) => { sink.deliver('a', idempotencyKey); return 'a'; });
      const inserted = await ctx.step('inserted', ({ idempotencyKey }) => { sink.deliver('inserted', idempotencyKey); return 'new'; });
      const b = await ctx.step('b', ({ idempotencyKey }) => { sink.deliver('b', idempotencyKey); return 'b'; });
      const d = await ctx.approve({ title: 'ship?' });
      return [a, inserted, b, d.approved];
    });

    it('inserting one call between resumes costs exactly one live call (preview says misses: 1)', async () => {
      const { engine, store } = await setup([v1]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'evolving', input: {}, execute: true });
      const before = await entriesOf(store, run.id);
      const deliveriesBefore = sink.deliveries.length;
      const engine2 = (await setup([v2], { store })).engine;
      const preview = await engine2.runPreview({ runId: run.id, namespace: NS });
      expect(preview).toMatchObject({ hits: 1, misses: 1, reruns: 0, skipped: 2, orphaned: 0, drift: true, outcome: 'live_call', liveCall: { name: 'inserted', why: 'miss' } });
      expect(await entriesOf(store, run.id)).toEqual(before); // zero writes
      expect(sink.deliveries.length).toBe(deliveriesBefore); // zero live calls
      const resumed = await engine2.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUSPENDED');
      expect(sink.deliveries.slice(deliveriesBefore).map((d) => d.label)).toEqual(['inserted']);
      const after = await engine2.runPreview({ runId: run.id, namespace: NS });
      expect(after).toMatchObject({ hits: 4, misses: 0, orphaned: 0, outcome: 'parked' });
      // Removing the call again leaves its entry orphaned: reported, not re-executed.
      const back = await (await setup([v1], { store })).engine.runPreview({ runId: run.id, namespace: NS });
      expect(back).toMatchObject({ hits: 3, misses: 0, orphaned: 1, outcome: 'parked' });
    });

    it('resume with invalidate records a cancelled entry and reruns that effect under the same key', async () => {
      const { engine, store } = await setup([v1]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'evolving', input: {}, execute: true });
      const bOk = (await entriesOf(store, run.id)).find((e) => e.name === 'b' && e.status === 'ok')!;
      const preview = await engine.runPreview({ runId: run.id, namespace: NS, invalidate: [bOk.seq] });
      expect(preview).toMatchObject({ hits: 1, reruns: 1, outcome: 'live_call', liveCall: { name: 'b', why: 'rerun after cancelled' } });
      const keysBefore = sink.keysOf('b');
      const countBefore = sink.count('b');
      await engine.runResume({ runId: run.id, namespace: NS, invalidate: [bOk.seq] });
      expect(sink.count('b')).toBe(countBefore + 1);
      expect(sink.keysOf('b')).toEqual(keysBefore);
      const cancelled = (await entriesOf(store, run.id)).filter((e) => e.status === 'cancelled');
      expect(cancelled).toMatchObject([{ kind: 'step', name: 'b', refSeq: bOk.refSeq ?? bOk.seq, payload: { reason: 'invalidated', seq: bOk.seq } }]);
      await expect(engine.runResume({ runId: run.id, namespace: NS, invalidate: [9999] })).rejects.toThrow(/no entry at that seq/);
    });

    it('drift: strict refuses to resume with FlowDriftError (restart, abandon); warn proceeds; restart starts anew', async () => {
      const strict1 = defineWorkflow({ name: 'strict', input: z.object({}), drift: 'strict' }, async (ctx) => ctx.signal('go'));
      const strict2 = defineWorkflow({ name: 'strict', input: z.object({}), drift: 'strict' }, async (ctx) => { await ctx.signal('go'); return 'v2'; });
      const { engine, store } = await setup([strict1]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'strict', input: {}, execute: true });
      const engine2 = (await setup([strict2], { store })).engine;
      const err = await engine2.runResume({ runId: run.id, namespace: NS }).catch((e) => e);
      expect(err).toBeInstanceOf(FlowDriftError);
      expect(err.choices).toEqual(['restart', 'abandon']);
      // An executor picking the run up fails it with the same error rather than run another graph.
      await engine2.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: 1, signalId: 's' });
      const [failed] = await engine2.runExecutePending();
      expect(failed!.run!.error).toMatchObject({ name: 'FlowDriftError', reason: 'flow_drift' });
      const restarted = await engine2.runResume({ runId: run.id, namespace: NS, drift: 'restart' });
      expect(restarted.run.status).toBe('FAILED'); // already ended: abandoning it changes nothing
      expect(restarted.restartedAs).toMatchObject({ workflowName: 'strict', labels: { 'waymark.restarted_from': run.id } });
      const relaxed1 = defineWorkflow({ name: 'relaxed', input: z.object({}) }, async (ctx) => { await ctx.signal('go'); return 'v1'; });
      const relaxed2 = defineWorkflow({ name: 'relaxed', input: z.object({}) }, async (ctx) => { await ctx.signal('go'); return 'v2'; });
      const r = await (await setup([relaxed1], { store })).engine.runStart({ namespace: NS, workflowName: 'relaxed', input: {}, execute: true });
      const warnEngine = (await setup([relaxed2], { store })).engine;
      expect(await warnEngine.runPreview({ runId: r.run.id, namespace: NS })).toMatchObject({ drift: true, outcome: 'parked', hits: 1 });
      await warnEngine.signalSend({ runId: r.run.id, namespace: NS, name: 'go', payload: 1, signalId: 's' });
      const [done] = await warnEngine.runExecutePending();
      expect(done!.run!.output).toBe('v2');
    });

    it('resuming a run another worker holds is refused', async () => {
      const gate = deferred();
      const entered = deferred();
      const slow = defineWorkflow({ name: 'slow', input: z.object({}) }, async (ctx) => ctx.step('wait', async () => { entered.resolve(); await gate.promise; return 1; }));
      const { engine } = await setup([slow]);
      const started = engine.runStart({ namespace: NS, workflowName: 'slow', input: {}, execute: true });
      await entered.promise;
      const runs = await engine.store.runList({ namespace: NS, pageSize: 1 });
      await expect(engine.runResume({ runId: runs.runs[0]!.id, namespace: NS })).rejects.toBeInstanceOf(RunStateError);
      gate.resolve();
      expect((await started).run.status).toBe('SUCCEEDED');
    });

    it('a resume reads a journal longer than a page in keyset pages and replays it as one read would', async () => {
      const pagedSink = new EffectSink();
      // Steps of three names (each name's content key repeats: occurrences 0..7), a wait, one step after.
      const paged = defineWorkflow({ name: 'paged', input: z.object({}) }, async (ctx) => {
        const seen: number[] = [];
        for (let i = 0; i < 23; i++) seen.push(await ctx.step(`s${i % 3}`, () => { pagedSink.deliver(`s${i}`, ''); return i; }));
        const go = await ctx.signal('go', { schema: z.number() });
        const after = await ctx.step('after', () => { pagedSink.deliver('after', ''); return go + 1; });
        return { sum: seen.reduce((a, b) => a + b, 0), after };
      });
      const { engine, store } = await setup([paged]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'paged', input: {}, execute: true });
      expect(run.status).toBe('SUSPENDED');
      await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: 41, signalId: 'go-1' });
      const whole = await entriesOf(store, run.id);
      // Every page size around the journal's length and its divisors: one page, exact multiples, a short last page.
      for (const size of [1, 2, 4, 5, 7, whole.length - 1, whole.length, whole.length + 1]) {
        expect(await journalReadAll(store, run.id, size), `page size ${size}`).toEqual(whole);
      }
      // The resume itself, on an engine reading 4 entries a page, through a store that records its reads.
      const reads: { afterSeq?: number; limit?: number }[] = [];
      const recording = new Proxy(store, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver) as unknown;
          if (prop === 'journalList') {
            return (p: Parameters<typeof store.journalList>[0]) => {
              if (p.runId === run.id) reads.push({ afterSeq: p.afterSeq, limit: p.limit });
              return target.journalList(p);
            };
          }
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        },
      });
      const resumer = (await setup([paged], { store: recording, journalPageSize: 4 })).engine;
      const delivered = pagedSink.deliveries.length;
      const result = await resumer.runExecute({ runId: run.id, namespace: NS });
      expect(result?.outcome).toBe('succeeded');
      expect((await store.runGet({ runId: run.id, namespace: NS })).output).toEqual({ sum: 253, after: 42 });
      expect(pagedSink.deliveries.slice(delivered).map((d) => d.label)).toEqual(['after']); // the 23 replayed, none re-run
      const pages = Math.floor(whole.length / 4) + 1;
      expect(reads.slice(0, pages)).toEqual(Array.from({ length: pages }, (_, i) => ({ afterSeq: i === 0 ? -1 : i * 4 - 1, limit: 4 })));
    });
  });
  describe(`${suite.label}: leases`, () => {
    it('a cancel fences the executing worker: its in-flight step is aborted and nothing more is written', async () => {
      const gate = deferred();
      const entered = deferred<AbortSignal>();
      const wf = defineWorkflow({ name: 'fenced', input: z.object({}) }, async (ctx) => {
        await ctx.step('long', async ({ signal }) => { entered.resolve(signal); await gate.promise; return 1; });
        return ctx.step('after', () => 2);
      });
      const { engine, store } = await setup([wf]);
      const started = engine.runStart({ namespace: NS, workflowName: 'fenced', input: {}, execute: true });
      const signal = await entered.promise;
      const runId = (await store.runList({ namespace: NS, pageSize: 1 })).runs[0]!.id;
      await engine.runCancel({ runId, namespace: NS });
      const frozen = await entriesOf(store, runId);
      gate.resolve();
      const result = await started;
      expect(result.execution!.outcome).toBe('lease_lost');
      expect(result.execution!.error).toBeInstanceOf(LeaseLostError);
      expect(signal.aborted).toBe(true);
      expect(await entriesOf(store, runId)).toEqual(frozen);
      expect((await store.runGet({ runId, namespace: NS })).status).toBe('CANCELLED');
    });

    it('a worker whose lease was taken over stops without writing; the new holder redispatches with the same key', async () => {
      const gate = deferred();
      const entered = deferred();
      const keys: string[] = [];
      const wf = defineWorkflow({ name: 'takeover', input: z.object({}) }, async (ctx) =>
        ctx.step('slow', async ({ idempotencyKey }) => {
          keys.push(idempotencyKey);
          if (keys.length === 1) { entered.resolve(); await gate.promise; }
          return `done by attempt ${keys.length}`;
        }, { intent: true }));
      const clock = new FakeClock();
      const one = await setup([wf], { clock, holder: 'worker-1' });
      const two = await setup([wf], { clock, holder: 'worker-2', store: one.store });
      const first = one.engine.runStart({ namespace: NS, workflowName: 'takeover', input: {}, execute: true });
      await entered.promise;
      const runId = (await one.store.runList({ namespace: NS, pageSize: 1 })).runs[0]!.id;
      await env.advance(clock, TTL + 1);
      const second = await two.engine.runExecute({ runId });
      expect(second!.outcome).toBe('succeeded');
      const frozen = await entriesOf(one.store, runId);
      gate.resolve();
      expect((await first).execution!.outcome).toBe('lease_lost');
      expect(await entriesOf(one.store, runId)).toEqual(frozen);
      expect(keys[0]).toBe(keys[1]);
      expect(shape(frozen)).toEqual(['running step slow', 'ok step slow']);
      expect(second!.run!.output).toBe('done by attempt 2');
    });

    it('the holder renews its lease at a third of the TTL while executing', async () => {
      vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
      try {
        const gate = deferred();
        const entered = deferred();
        const wf = defineWorkflow({ name: 'renews', input: z.object({}) }, async (ctx) => ctx.step('wait', async () => { entered.resolve(); await gate.promise; return 1; }));
        const clock = new FakeClock();
        const { engine, store } = await setup([wf], { clock });
        const started = engine.runStart({ namespace: NS, workflowName: 'renews', input: {}, execute: true });
        await entered.promise;
        const runId = (await store.runList({ namespace: NS, pageSize: 1 })).runs[0]!.id;
        const before = (await store.runGet({ runId, namespace: NS })).leaseExpiresAt!.getTime();
        clock.advance(TTL / 3);
        const renewed = once(engine.events, 'lease-renewed');
        await vi.advanceTimersByTimeAsync(Math.floor(TTL / 3));
        expect((await renewed)[0].runId).toBe(runId);
        const after = (await store.runGet({ runId, namespace: NS })).leaseExpiresAt!.getTime();
        if (env.fakeClock) expect(after).toBe(before + TTL / 3);
        else expect(after).toBeGreaterThan(before);
        gate.resolve();
        expect((await started).run.status).toBe('SUCCEEDED');
      } finally {
        vi.useRealTimers();
      }
    });
  });
}
