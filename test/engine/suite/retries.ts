import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  defineTool, defineWorkflow, EffectFailedError, EffectTimeoutError, NonRetryableError, RetriesExhaustedError,
} from '../../../src/index.js';
import type { RunEngine } from '../../../src/engine/run-engine.js';
import type { JournalEntry } from '../../../src/journal/journal-entry.js';
import { EffectSink, NS } from '../harness.js';
import type { FakeClock } from '../harness.js';
import type { Suite, SuiteEnv } from './support.js';

/** Lets backoff timers fire until the run ends (or `rounds` run out): what the sweeper and an executor do. */
async function driveTimers(env: SuiteEnv, clock: FakeClock, engine: RunEngine, rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await env.advance(clock, 120_001);
    const { resolved } = await engine.suspensionsResolveDue({ limit: 10 });
    if (resolved.length === 0) return;
    await engine.runExecutePending();
  }
}

/** `status kind attempt` of each effect entry (status events left out). */
function attempts(entries: JournalEntry[]): string[] {
  return entries.filter((e) => e.kind !== 'status').map((e) => `${e.status} ${e.kind} ${e.attempt ?? '-'}`);
}

/** Retry policies, per-effect timeouts, and the handled-last-error rule (docs/journal.md "What replay does"). */
export function retriesSuite(suite: Suite): void {
  const { env, setup, entriesOf } = suite;

  describe(`${suite.label}: retries`, () => {
    it('a tool failing twice then succeeding: three attempts under one idempotency key, two durable backoff timers, SUCCEEDED', async () => {
      const sink = new EffectSink();
      let calls = 0;
      const flaky = defineTool({
        name: 'flaky', description: 'fails twice', input: z.object({}),
        retry: { maxAttempts: 3, initialInterval: '1s' },
        execute: (_a, { idempotencyKey }) => {
          sink.deliver('flaky', idempotencyKey);
          if (++calls < 3) throw new Error(`503 number ${calls}`);
          return { ok: calls };
        },
      });
      const wf = defineWorkflow({ name: 'uses-flaky', input: z.object({}) }, async (ctx) => ctx.tool(flaky, {}));
      const { engine, store, clock } = await setup([wf, flaky]);
      const { run, waitingOn } = await engine.runStart({ namespace: NS, workflowName: 'uses-flaky', input: {}, execute: true });
      expect(run.status).toBe('SUSPENDED'); // the backoff is a wait in the journal: no lease, no memory
      expect(waitingOn).toMatchObject([{ kind: 'tool', name: 'flaky', title: 'retry tool "flaky": attempt 2 of 3' }]);
      await driveTimers(env, clock, engine);
      const final = await store.runGet({ runId: run.id, namespace: NS });
      expect(final.status).toBe('SUCCEEDED');
      expect(final.output).toEqual({ ok: 3 });
      expect(sink.count('flaky')).toBe(3);
      expect(sink.keysOf('flaky').size).toBe(1);
      const entries = await entriesOf(store, run.id);
      expect(attempts(entries)).toEqual([
        'running tool 1', 'error tool 1', 'suspended tool 2', 'resolved tool -',
        'running tool 2', 'error tool 2', 'suspended tool 3', 'resolved tool -',
        'running tool 3', 'ok tool 3',
      ]);
      expect(new Set(entries.filter((e) => e.kind === 'tool').map((e) => e.idempotencyKey ?? ''))).toEqual(new Set([sink.deliveries[0]!.key, '']));
      const timers = entries.filter((e) => e.status === 'suspended');
      // 1 s, then 2 s: initialInterval times the coefficient
      expect(timers.map((t) => (t.payload as { delayMs: number }).delayMs)).toEqual([1000, 2000]);
      expect(entries.find((e) => e.status === 'error')!.error).toMatchObject({ name: 'Error', message: '503 number 1' });
    });

    it('a NonRetryableError fails at once, whatever the policy; so does an error named in nonRetryable', async () => {
      let calls = 0;
      const card = defineTool({
        name: 'card', description: 'declines', input: z.object({ mode: z.string() }),
        retry: { maxAttempts: 5, nonRetryable: ['CardDeclined'] },
        execute: ({ mode }) => {
          calls++;
          if (mode === 'class') throw new NonRetryableError('card declined for good');
          const e = new Error('declined');
          e.name = 'CardDeclined';
          throw e;
        },
      });
      const wf = defineWorkflow({ name: 'pay', input: z.object({ mode: z.string() }) }, async (ctx, { mode }) =>
        ctx.tool(card, { mode }).catch((e: unknown) => ({ caught: (e as EffectFailedError).errorName, exhausted: e instanceof RetriesExhaustedError })));
      const { engine, store } = await setup([wf, card]);
      for (const mode of ['class', 'name']) {
        const { run } = await engine.runStart({ namespace: NS, workflowName: 'pay', input: { mode }, execute: true });
        expect(run.status).toBe('SUCCEEDED');
        expect(run.output).toEqual({ caught: mode === 'class' ? 'NonRetryableError' : 'CardDeclined', exhausted: false });
        expect(attempts(await entriesOf(store, run.id))).toEqual(['running tool 1', 'error tool 1']);
      }
      expect(calls).toBe(2);
    });

    it('when attempts run out the workflow catches one RetriesExhaustedError with the last cause and the count; uncaught, the run fails with it', async () => {
      let calls = 0;
      const step = defineWorkflow({ name: 'always-fails', input: z.object({ catchIt: z.boolean() }) }, async (ctx, { catchIt }) => {
        const attempt = ctx.step('fetch', () => {
          calls++;
          throw new TypeError(`down ${calls}`);
        }, { retry: { maxAttempts: 3, initialInterval: '100ms', backoffCoefficient: 3 } });
        if (!catchIt) return attempt;
        try {
          return await attempt;
        } catch (e) {
          const x = e as RetriesExhaustedError;
          return { exhausted: e instanceof RetriesExhaustedError, effectFailed: e instanceof EffectFailedError, attempts: x.attempts, last: x.lastError, errorName: x.errorName };
        }
      });
      const { engine, store, clock } = await setup([step]);
      const caught = await engine.runStart({ namespace: NS, workflowName: 'always-fails', input: { catchIt: true }, execute: true });
      await driveTimers(env, clock, engine);
      const done = await store.runGet({ runId: caught.run.id, namespace: NS });
      expect(done.status).toBe('SUCCEEDED');
      expect(done.output).toEqual({ exhausted: true, effectFailed: true, attempts: 3, last: { name: 'TypeError', message: 'down 3' }, errorName: 'TypeError' });
      const entries = await entriesOf(store, caught.run.id);
      expect(attempts(entries)).toEqual(['error step 1', 'suspended step 2', 'resolved step -', 'error step 2', 'suspended step 3', 'resolved step -', 'error step 3']);
      expect(entries.filter((e) => e.status === 'suspended').map((t) => (t.payload as { delayMs: number }).delayMs)).toEqual([100, 300]);
      expect(calls).toBe(3);

      const uncaught = await engine.runStart({ namespace: NS, workflowName: 'always-fails', input: { catchIt: false }, execute: true });
      await driveTimers(env, clock, engine);
      const failed = await store.runGet({ runId: uncaught.run.id, namespace: NS });
      expect(failed.status).toBe('FAILED');
      expect(failed.error).toMatchObject({
        name: 'RetriesExhaustedError', reason: 'retries_exhausted',
        details: { effectKind: 'step', effectName: 'fetch', attempts: 3, lastError: { name: 'TypeError', message: 'down 6' } },
      });
      expect(calls).toBe(6);
      // A resume of the failed run starts a fresh series of attempts.
      const resumed = await engine.runResume({ runId: failed.id, namespace: NS });
      expect(resumed.run.status).toBe('SUSPENDED');
      expect(calls).toBe(7);
      expect(attempts(await entriesOf(store, failed.id)).slice(-2)).toEqual(['error step 1', 'suspended step 2']);
    });

    it('a step without a policy is not retried, and its journal is what it was (one entry, attempt 1)', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'plain', input: z.object({}) }, async (ctx) =>
        ctx.step('once', () => {
          calls++;
          throw new Error('no');
        }).catch((e: EffectFailedError) => e.errorMessage));
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'plain', input: {}, execute: true });
      expect(run.status).toBe('SUCCEEDED');
      expect(calls).toBe(1);
      expect(attempts(await entriesOf(store, run.id))).toEqual(['error step 1']);
    });

    it('bad retry options are refused with field violations, before anything runs', async () => {
      expect(() => defineTool({ name: 'bad', description: '', input: z.object({}), retry: { maxAttempts: 0 }, execute: () => 1 })).toThrow(/retry.maxAttempts/);
      expect(() => defineTool({ name: 'bad', description: '', input: z.object({}), retry: { backoffCoefficient: 0.5 }, execute: () => 1 })).toThrow(/backoffCoefficient/);
      expect(() => defineTool({ name: 'bad', description: '', input: z.object({}), timeout: 'soon', execute: () => 1 })).toThrow(/timeout/);
      let ran = false;
      const wf = defineWorkflow({ name: 'bad-step', input: z.object({}) }, async (ctx) =>
        ctx.step('x', () => { ran = true; }, { retry: { initialInterval: '1h', maxInterval: '1s' } }));
      const { engine } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'bad-step', input: {}, execute: true });
      expect(run.status).toBe('FAILED');
      expect(run.error).toMatchObject({ name: 'InvalidInputError' });
      expect(run.error!.message).toMatch(/retry.maxInterval/);
      expect(ran).toBe(false);
    });
  });

  describe(`${suite.label}: timeouts`, () => {
    it('a tool that never returns is aborted after its timeout (its signal fires) and retried; the next attempt succeeds', async () => {
      const aborted: unknown[] = [];
      let calls = 0;
      const hangs = defineTool({
        name: 'hangs', description: 'hangs the first time', input: z.object({}), mutating: false,
        timeout: '50ms', retry: { maxAttempts: 2, initialInterval: '1s' },
        execute: (_a, { signal }) => {
          if (++calls > 1) return 'second';
          signal.addEventListener('abort', () => aborted.push(signal.reason));
          return new Promise<never>(() => {}); // ignores its signal: the attempt still ends at the timeout
        },
      });
      const wf = defineWorkflow({ name: 'uses-hangs', input: z.object({}) }, async (ctx) => ctx.tool(hangs, {}));
      const { engine, store, clock } = await setup([wf, hangs]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'uses-hangs', input: {}, execute: true });
      expect(run.status).toBe('SUSPENDED');
      expect(aborted).toHaveLength(1);
      expect(aborted[0]).toBeInstanceOf(EffectTimeoutError);
      await driveTimers(env, clock, engine);
      const final = await store.runGet({ runId: run.id, namespace: NS });
      expect(final.status).toBe('SUCCEEDED');
      expect(final.output).toBe('second');
      const entries = await entriesOf(store, run.id);
      expect(attempts(entries)).toEqual(['error tool 1', 'suspended tool 2', 'resolved tool -', 'ok tool 2']);
      expect(entries.find((e) => e.status === 'error')!.error).toMatchObject({ name: 'EffectTimeoutError', reason: 'effect_timeout', details: { timeoutMs: 50 } });
    });
  });


  describe(`${suite.label}: a handled error as the last effect`, () => {
    it('an error caught as the run\'s last effect does not rerun when the SUCCEEDED run is resumed', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'handles-last', input: z.object({}) }, async (ctx) => {
        await ctx.step('first', () => 1);
        try {
          await ctx.step('last', () => {
            calls++;
            throw new Error('expected failure');
          });
        } catch {
          return { handled: true };
        }
        return { handled: false };
      });
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'handles-last', input: {}, execute: true });
      expect(run.status).toBe('SUCCEEDED');
      const preview = await engine.runPreview({ runId: run.id, namespace: NS });
      expect(preview).toMatchObject({ outcome: 'succeeded', hits: 2, reruns: 0, misses: 0 });
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUCCEEDED');
      expect(resumed.run.output).toEqual({ handled: true });
      expect(calls).toBe(1);
      expect((await entriesOf(store, run.id)).filter((e) => e.kind === 'step' && e.name === 'last')).toHaveLength(1);
    });

    it('an error the run died on still reruns on resume: a FAILED status is no evidence it was handled', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'dies-last', input: z.object({}) }, async (ctx) =>
        ctx.step('last', () => {
          if (++calls === 1) throw new Error('first time');
          return 'second time';
        }));
      const { engine } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'dies-last', input: {}, execute: true });
      expect(run.status).toBe('FAILED');
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUCCEEDED');
      expect(resumed.run.output).toBe('second time');
      expect(calls).toBe(2);
    });
  });
}
