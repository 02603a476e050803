import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ApprovalNotFoundError, defineWorkflow, InvalidResolutionError, SignalTimeoutError,
} from '../../../src/index.js';
import type { JournalStore } from '../../../src/store/store.js';
import { FakeClock, NS } from '../harness.js';
import { deferred, PAST, type Suite } from './support.js';

/** Signals, approvals (and their races with deadlines) and child runs. */
export function waitsSuite(suite: Suite): void {
  const { env, setup, entriesOf } = suite;
  describe(`${suite.label}: signals`, () => {
    const wf = defineWorkflow({ name: 'order', input: z.object({}) }, async (ctx) => {
      const { qty } = await ctx.signal('restock', { schema: z.object({ qty: z.number().int().positive() }) });
      return qty;
    });

    it('a payload failing the pinned schema is refused, nothing is journaled and the run stays parked', async () => {
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'order', input: {}, execute: true });
      const before = await entriesOf(store, run.id);
      const err = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: { qty: -1 }, signalId: 's1' }).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidResolutionError);
      expect(err.violations).toMatchObject([{ field: 'qty' }]);
      const wrongType = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: { qty: 'three' }, signalId: 's2' }).catch((e) => e);
      expect(wrongType).toBeInstanceOf(InvalidResolutionError);
      const polluted = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: JSON.parse('{"__proto__": {"x": 1}, "qty": 1}'), signalId: 's3' }).catch((e) => e);
      expect(polluted.violations).toMatchObject([{ field: '__proto__' }]);
      expect(await entriesOf(store, run.id)).toEqual(before);
      expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUSPENDED');
      const pinned = before.find((e) => e.status === 'suspended')!.payload as Record<string, unknown>;
      expect(pinned).toMatchObject({ key: 'restock', schema: { type: 'object', required: ['qty'] } });
      expect(pinned.schemaHash).toMatch(/^[0-9a-f]{32}$/);
    });

    it('the first valid signal wins; the same signal id is applied once; a later one waits in the inbox', async () => {
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'order', input: {}, execute: true });
      const first = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: { qty: 3 }, signalId: 'a' });
      expect(first).toMatchObject({ applied: true, duplicate: false, buffered: false, reason: null });
      const dup = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: { qty: 3 }, signalId: 'a' });
      expect(dup).toMatchObject({ applied: true, duplicate: true });
      expect(dup.entry!.seq).toBe(first.entry!.seq);
      const late = await engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: { qty: 9 }, signalId: 'b' });
      expect(late).toMatchObject({ applied: false, duplicate: false, buffered: true, entry: null });
      expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('PENDING');
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe(3);
      expect((await store.signalInboxList({ runId: run.id })).map((s) => s.signalId)).toEqual(['b']);
    });

    it('SendSignal never reads the run\'s journal: it asks the store for the one wait it would reach', async () => {
      const long = defineWorkflow({ name: 'long', input: z.object({}) }, async (ctx) => {
        for (let i = 0; i < 30; i++) await ctx.step(`s${i}`, () => i);
        const { qty } = await ctx.signal('restock', { schema: z.object({ qty: z.number().int().positive() }) });
        return qty;
      });
      const calls: string[] = [];
      let recording = false;
      const base = await env.makeStore(new FakeClock());
      const store = new Proxy(base, {
        get(target, key) {
          const value = Reflect.get(target, key) as unknown;
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            if (recording) calls.push(String(key));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      const { engine } = await setup([long], { store });
      const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'long', input: {}, execute: true });
      expect(waitingOn).toMatchObject([{ kind: 'signal', name: 'restock' }]);
      const send = (signalId: string, payload: unknown) =>
        engine.signalSend({ runId: run.id, namespace: NS, name: 'restock', payload: payload as never, signalId });
      recording = true;
      await expect(send('bad', { qty: 0 })).rejects.toBeInstanceOf(InvalidResolutionError);
      const first = await send('a', { qty: 2 });
      expect(first).toMatchObject({ applied: true, duplicate: false, buffered: false, entry: { refSeq: waitingOn[0]!.seq } });
      // A duplicate, even with a payload the wait would refuse, gets the first delivery's outcome.
      expect(await send('a', { qty: -5 })).toMatchObject({ applied: true, duplicate: true, entry: { seq: first.entry!.seq } });
      expect(await send('b', { qty: 3 })).toMatchObject({ buffered: true, applied: false });
      await expect(engine.signalSend({ runId: run.id, namespace: 'elsewhere', name: 'restock', payload: { qty: 1 }, signalId: 'c' }))
        .rejects.toMatchObject({ name: 'RunNotFoundError' });
      recording = false;
      expect(calls).not.toContain('journalList');
      expect([...new Set(calls)].sort()).toEqual(['signalDeliver', 'suspensionOpenOldest']);
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe(2);
    });

    it('a signal sent before the run waits is buffered, and the wait takes it without parking (journaled, replayable)', async () => {
      const loop = defineWorkflow({ name: 'loop', input: z.object({}) }, async (ctx) => {
        const got: number[] = [];
        for (let i = 0; i < 3; i++) got.push(await ctx.signal('msg', { schema: z.number() }));
        return got;
      });
      const { engine, store } = await setup([loop]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'loop', input: {} });
      for (const [id, payload] of [['m1', 1], ['bad', 'not a number'], ['m2', 2]] as const) {
        expect(await engine.signalSend({ runId: run.id, namespace: NS, name: 'msg', payload, signalId: id })).toMatchObject({ buffered: true });
      }
      expect(await engine.signalSend({ runId: run.id, namespace: NS, name: 'msg', payload: 1, signalId: 'm1' })).toMatchObject({ duplicate: true, buffered: true });
      const [first] = await engine.runExecutePending();
      expect(first!.outcome).toBe('suspended'); // took m1, refused "bad" (a no-op), took m2, then waits for the third
      const third = await engine.signalSend({ runId: run.id, namespace: NS, name: 'msg', payload: 3, signalId: 'm3' });
      expect(third).toMatchObject({ applied: true, buffered: false });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toEqual([1, 2, 3]);
      const entries = await entriesOf(store, run.id);
      const deliveries = entries.filter((e) => e.kind === 'signal' && e.status !== 'suspended');
      expect(deliveries.map((e) => `${e.status} ${e.dedupeKey}`)).toEqual(['resolved signal:m1', 'noop signal:bad', 'resolved signal:m2', 'resolved signal:m3']);
      expect(await store.signalInboxList({ runId: run.id })).toEqual([]);
      const preview = await engine.runPreview({ runId: run.id, namespace: NS });
      expect(preview).toMatchObject({ outcome: 'succeeded', output: [1, 2, 3], misses: 0, invalidResolutions: 1 });
      // Every id stays delivered once, buffered or journaled.
      expect(await engine.signalSend({ runId: run.id, namespace: NS, name: 'msg', payload: 'x', signalId: 'bad' }))
        .toMatchObject({ duplicate: true, applied: false, reason: 'already_resolved' });
    });

    it('a deadline resolves a signal with its default', async () => {
      const timed = defineWorkflow({ name: 'timed', input: z.object({}) }, async (ctx) => ctx.signal('answer', { deadline: PAST, default: 'nobody answered' }));
      const { engine } = await setup([timed]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'timed', input: {}, execute: true });
      const due = await engine.suspensionsResolveDue({ limit: 10 });
      expect(due.resolved).toMatchObject([{ runId: run.id, applied: true }]);
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe('nobody answered');
    });
  });
  describe(`${suite.label}: approvals`, () => {
    const wf = defineWorkflow({ name: 'refund', input: z.object({ amount: z.number() }) }, async (ctx, { amount }) => {
      const d = await ctx.approve({ title: `Refund $${amount}?`, deadline: PAST, onTimeout: 'deny' });
      return { approved: d.approved, by: d.by, timedOut: d.timedOut };
    });

    for (const first of ['human', 'deadline'] as const) {
      it(`a human and a deadline race for one approval (${first} first): one wins, the loser learns already_resolved, every replay agrees`, async () => {
        // The sweeper lists the due deadline, then (human first) the person decides before the
        // sweeper's resolution lands: a store wrapper holds the sweeper between its read and its write.
        const listed = deferred();
        const proceed = deferred();
        const base = await env.makeStore(new FakeClock());
        const store = new Proxy(base, {
          get(target, key) {
            if (key === 'suspensionListDue') {
              return async (p: Parameters<JournalStore['suspensionListDue']>[0]) => {
                const due = await target.suspensionListDue(p);
                listed.resolve();
                await proceed.promise;
                return due;
              };
            }
            const value = Reflect.get(target, key) as unknown;
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const { engine } = await setup([wf], { store });
        const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'refund', input: { amount: 5 }, execute: true });
        const human = () => engine.approvalDecide({ namespace: NS, approvalId: waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'req-1' });
        const sweep = engine.suspensionsResolveDue({ limit: 10 });
        await listed.promise;
        let h;
        if (first === 'human') h = await human();
        proceed.resolve();
        const d = await sweep;
        if (first === 'deadline') h = await human();
        h = h!;
        expect([h.applied, d.resolved[0]!.applied].filter(Boolean)).toHaveLength(1);
        if (first === 'human') expect(d.resolved[0]!.applied).toBe(false);
        else expect(h).toMatchObject({ applied: false, reason: 'already_resolved' });
        const expected = first === 'human' ? { approved: true, by: 'ann', timedOut: false } : { approved: false, by: null, timedOut: true };
        const [done] = await engine.runExecutePending();
        expect(done!.run!.output).toEqual(expected);
        const entries = await entriesOf(store, run.id);
        expect(entries.filter((e) => e.status === 'resolved')).toHaveLength(1);
        expect(entries.filter((e) => e.status === 'noop')).toHaveLength(1);
        for (let i = 0; i < 3; i++) {
          const preview = await engine.runPreview({ runId: run.id, namespace: NS });
          expect(preview).toMatchObject({ outcome: 'succeeded', output: expected, misses: 0, reruns: 0 });
        }
        const again = await engine.runResume({ runId: run.id, namespace: NS });
        expect(again.run.output).toEqual(expected);
      });
    }

    it('when both race concurrently exactly one is applied', async () => {
      const { engine } = await setup([wf]);
      const { waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'refund', input: { amount: 7 }, execute: true });
      const [h, d] = await Promise.all([
        engine.approvalDecide({ namespace: NS, approvalId: waitingOn[0]!.approvalId!, approve: true, by: 'bob', requestId: 'r' }),
        engine.suspensionsResolveDue({ limit: 10 }),
      ]);
      // The sweeper may even list the deadline after the person closed it: then it has nothing to do.
      expect(Number(h.applied) + d.resolved.filter((r) => r.applied).length).toBe(1);
    });

    it('a decision failing a custom schema is refused; the same request id is applied once', async () => {
      const custom = defineWorkflow({ name: 'limit', input: z.object({}) }, async (ctx) => {
        const d = await ctx.approve({ title: 'Raise limit?', schema: z.object({ approved: z.boolean(), limit: z.number().max(1000) }) });
        return d.limit;
      });
      const { engine } = await setup([custom]);
      const { waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'limit', input: {}, execute: true });
      const id = waitingOn[0]!.approvalId!;
      await expect(engine.approvalDecide({ namespace: NS, approvalId: id, approve: true, by: 'x', requestId: 'r0', payload: { limit: 5000 } }))
        .rejects.toBeInstanceOf(InvalidResolutionError);
      expect(await engine.approvalDecide({ namespace: NS, approvalId: id, approve: true, by: 'x', requestId: 'r1', payload: { limit: 500 } })).toMatchObject({ applied: true });
      expect(await engine.approvalDecide({ namespace: NS, approvalId: id, approve: true, by: 'x', requestId: 'r1', payload: { limit: 500 } })).toMatchObject({ duplicate: true });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe(500);
    });
  });
  describe(`${suite.label}: timers`, () => {
    it('a sleep parks with its deadline in the journal and resumes once the sweeper finds it due', async () => {
      const wf = defineWorkflow({ name: 'nap', input: z.object({}) }, async (ctx) => {
        await ctx.sleep('1h');
        return 'rested';
      });
      const { engine, store, clock } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'nap', input: {}, execute: true });
      const wait = (await entriesOf(store, run.id)).find((e) => e.status === 'suspended')!;
      expect(wait).toMatchObject({ kind: 'sleep', payload: { key: 'sleep', onTimeout: {} } });
      expect(Date.parse((wait.payload as { deadlineAt: string }).deadlineAt)).toBeGreaterThan(Date.now() - 60_000);
      expect((await engine.suspensionsResolveDue({ limit: 10 })).resolved).toEqual([]);
      await env.advance(clock, 3_600_001);
      expect((await engine.suspensionsResolveDue({ limit: 10 })).resolved).toMatchObject([{ runId: run.id, applied: true }]);
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe('rested');
    });

    it('Promise.race of a signal and a sleep: whichever resolves first wins, and replay agrees', async () => {
      const wf = defineWorkflow({ name: 'race', input: z.object({}) }, async (ctx) =>
        Promise.race([ctx.signal('answer').then((a) => ({ answer: a })), ctx.sleep('10m').then(() => ({ answer: 'timed out' }))]));
      const { engine, clock } = await setup([wf]);
      const a = await engine.runStart({ namespace: NS, workflowName: 'race', input: {}, execute: true });
      expect(a.waitingOn.map((w) => w.kind)).toEqual(['signal', 'sleep']);
      await engine.signalSend({ runId: a.run.id, namespace: NS, name: 'answer', payload: 42, signalId: 's' });
      const b = await engine.runStart({ namespace: NS, workflowName: 'race', input: {}, execute: true });
      await env.advance(clock, 600_001);
      await engine.suspensionsResolveDue({ limit: 10 });
      await engine.runExecutePending();
      expect((await engine.store.runGet({ runId: a.run.id, namespace: NS })).output).toEqual({ answer: 42 });
      expect((await engine.store.runGet({ runId: b.run.id, namespace: NS })).output).toEqual({ answer: 'timed out' });
    });

    it('a signal whose deadline passes without a default throws SignalTimeoutError', async () => {
      const wf = defineWorkflow({ name: 'impatient', input: z.object({}) }, async (ctx) => {
        try {
          return await ctx.signal('answer', { deadline: PAST });
        } catch (e) {
          return e instanceof SignalTimeoutError ? 'timeout' : 'other';
        }
      });
      const { engine } = await setup([wf]);
      await engine.runStart({ namespace: NS, workflowName: 'impatient', input: {}, execute: true });
      await engine.suspensionsResolveDue({ limit: 10 });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe('timeout');
    });
  });

  describe(`${suite.label}: invalidated approvals`, () => {
    it('invalidating a decided approval asks again under a new id; the old id is refused', async () => {
      const wf = defineWorkflow({ name: 'reask', input: z.object({}) }, async (ctx) => (await ctx.approve({ title: 'go?' })).approved);
      const { engine } = await setup([wf]);
      const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'reask', input: {}, execute: true });
      const first = waitingOn[0]!;
      await engine.approvalDecide({ namespace: NS, approvalId: first.approvalId!, approve: true, by: 'a', requestId: 'r1' });
      await engine.runExecutePending();
      const resumed = await engine.runResume({ runId: run.id, namespace: NS, invalidate: [first.seq] });
      expect(resumed.run.status).toBe('SUSPENDED');
      const [again] = resumed.execution!.waitingOn;
      expect(again!.approvalId).not.toBe(first.approvalId);
      await expect(engine.approvalDecide({ namespace: NS, approvalId: first.approvalId!, approve: true, by: 'a', requestId: 'r2' }))
        .rejects.toBeInstanceOf(ApprovalNotFoundError);
      await engine.approvalDecide({ namespace: NS, approvalId: again!.approvalId!, approve: false, by: 'b', requestId: 'r3' });
      const [done] = await engine.runExecutePending();
      expect(done!.run!.output).toBe(false);
    });
  });

  describe(`${suite.label}: children`, () => {
    const child = defineWorkflow({ name: 'child', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
      if (n < 0) throw new Error('negative');
      if (n === 0) await ctx.signal('never');
      return ctx.step('square', () => n * n);
    });
    const parent = defineWorkflow({ name: 'parent', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
      try {
        return { squared: await ctx.child(child, { n }) };
      } catch (e) {
        return { failed: (e as Error).name };
      }
    });

    it('a parent parks on its child; the child ending resolves the parent, which completes', async () => {
      const { engine, store } = await setup([parent, child]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'parent', input: { n: 4 }, execute: true });
      expect(run.status).toBe('SUSPENDED');
      const kids = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(kids).toMatchObject([{ workflowName: 'child', status: 'PENDING', parentRunId: run.id }]);
      const results = await engine.runExecutePending();
      expect(results.map((r) => r.outcome)).toEqual(['succeeded', 'succeeded']);
      expect((await store.runGet({ runId: run.id, namespace: NS })).output).toEqual({ squared: 16 });
      expect((await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs).toHaveLength(1);
    });

    it('a failed child surfaces as ChildRunFailedError', async () => {
      const { engine, store } = await setup([parent, child]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'parent', input: { n: -1 }, execute: true });
      await engine.runExecutePending();
      expect((await store.runGet({ runId: run.id, namespace: NS })).output).toEqual({ failed: 'ChildRunFailedError' });
    });

    it('cancelling a parent cancels its waiting child', async () => {
      const { engine, store } = await setup([parent, child]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'parent', input: { n: 0 }, execute: true });
      await engine.runExecutePending();
      const kid = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs[0]!;
      expect(kid.status).toBe('SUSPENDED');
      const { cancelled, run: after } = await engine.runCancel({ runId: run.id, namespace: NS });
      expect(after.status).toBe('CANCELLED');
      expect(cancelled.sort()).toEqual([run.id, kid.id].sort());
      expect((await store.runGet({ runId: kid.id, namespace: NS })).status).toBe('CANCELLED');
    });
  });
}
