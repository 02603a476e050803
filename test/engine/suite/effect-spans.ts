import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, defineWorkflow } from '../../../src/index.js';
import type { EffectAttempt, EffectEnd, EffectSpan, EffectTracer } from '../../../src/engine/runtime/effect-tracer.js';
import { FakeClock, NS, TTL } from '../harness.js';
import { deferred, type Suite } from './support.js';

/**
 * The engine's effect tracer hook (docs/tracing.md "Spans per effect"): told of every live attempt
 * with its identity, never of an effect the journal answers; the attempt runs within the span it
 * returns and sends its traceparent on (the `http` tool as a header, StepInfo to tools and steps).
 */
class RecordingTracer implements EffectTracer {
  readonly started: EffectAttempt[] = [];
  readonly ends: { effect: EffectAttempt; end: EffectEnd }[] = [];
  /** The runs of the execution attempts run within the tracer, and the effects each saw start. */
  readonly attempts: { runId: string; effects: number }[] = [];
  private inside: { runId: string; effects: number } | null = null;

  async attemptWithin<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const attempt = { runId, effects: 0 };
    this.attempts.push(attempt);
    this.inside = attempt;
    try {
      return await fn();
    } finally {
      this.inside = null;
    }
  }

  effectStarted(effect: EffectAttempt): EffectSpan {
    const n = this.started.push(effect);
    if (this.inside?.runId === effect.runId) this.inside.effects++;
    return {
      traceparent: `00-${'ab'.repeat(16)}-${n.toString(16).padStart(16, '0')}-01`,
      within: (fn) => fn(),
      ended: (end) => void this.ends.push({ effect, end }),
    };
  }

  taskTraceparent(): string {
    throw new Error('no remote tasks here');
  }

  taskEnded(): void {}

  names(): string[] {
    return this.started.map((e) => `${e.kind} ${e.name}`);
  }
}

export function effectSpansSuite(suite: Suite): void {
  const { env, setup } = suite;
  describe(`${suite.label}: effect spans`, () => {
    const received: IncomingHttpHeaders[] = [];
    const server = createServer((req, res) => {
      received.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
    let url = '';
    beforeAll(async () => {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const seen: (string | undefined)[] = [];
    const probe = defineTool({
      name: 'probe', description: 'records the traceparent it is given', input: z.object({}),
      execute: (_args, { traceparent }) => {
        seen.push(traceparent);
        return 'probed';
      },
    });
    const wf = defineWorkflow({ name: 'traced', input: z.object({ url: z.string() }) }, async (ctx, { url }) => {
      const a = await ctx.step('a', () => 1);
      await ctx.tool(probe, {});
      await ctx.tool('http', { url, method: 'POST', body: { a } });
      await ctx.now();
      await ctx.signal('go');
      return ctx.step('b', () => 2);
    });

    it('each live attempt is reported once with its traceparent sent on; a resume elsewhere reports only what runs live', async () => {
      seen.length = 0;
      received.length = 0;
      const clock = new FakeClock();
      const first = new RecordingTracer();
      const one = await setup([wf, probe], { clock, holder: 'worker-1', tracer: first });
      const { run } = await one.engine.runStart({ namespace: NS, workflowName: 'traced', input: { url }, execute: true });
      expect(first.names()).toEqual(['step a', 'tool probe', 'tool http', 'now now']);
      expect(first.started.every((e) => e.runId === run.id && e.attempt === 1 && !e.redispatch && e.workflow === 'traced')).toBe(true);
      expect(first.ends.map((e) => e.end.outcome)).toEqual(['ok', 'ok', 'ok', 'ok']);
      // The execution attempt ran within the tracer (its span active), and its effects inside it.
      expect(first.attempts).toEqual([{ runId: run.id, effects: 4 }]);
      // The tool got its span's traceparent; the http tool sent its own as a header.
      expect(seen).toEqual([`00-${'ab'.repeat(16)}-0000000000000002-01`]);
      expect(received.map((h) => h.traceparent)).toEqual([`00-${'ab'.repeat(16)}-0000000000000003-01`]);
      expect(received[0]!['idempotency-key']).toBe(first.started[2]!.idempotencyKey);

      const second = new RecordingTracer();
      const two = await setup([wf, probe], { clock, holder: 'worker-2', store: one.store, tracer: second });
      await two.engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: null, signalId: 'go' });
      const [done] = await two.engine.runExecutePending();
      expect(done!.outcome).toBe('succeeded');
      // The replayed step, tools and clock read make no span; the step after the wait does.
      expect(second.names()).toEqual(['step b']);
      expect(second.attempts).toEqual([{ runId: run.id, effects: 1 }]);
      expect(seen).toHaveLength(1);
      expect(received).toHaveLength(1);
    });

    it('a redispatch after a takeover is reported as one, with the same key and attempt; the stale attempt is abandoned', async () => {
      const gate = deferred();
      const entered = deferred();
      let calls = 0;
      const slow = defineWorkflow({ name: 'traced-takeover', input: z.object({}) }, async (ctx) =>
        ctx.step('slow', async () => {
          if (++calls === 1) {
            entered.resolve();
            await gate.promise;
          }
          return calls;
        }, { intent: true }));
      const clock = new FakeClock();
      const first = new RecordingTracer();
      const second = new RecordingTracer();
      const one = await setup([slow], { clock, holder: 'worker-1', tracer: first });
      const two = await setup([slow], { clock, holder: 'worker-2', store: one.store, tracer: second });
      const started = one.engine.runStart({ namespace: NS, workflowName: 'traced-takeover', input: {}, execute: true });
      await entered.promise;
      const runId = (await one.store.runList({ namespace: NS, pageSize: 1 })).runs[0]!.id;
      await env.advance(clock, TTL + 1);
      expect((await two.engine.runExecute({ runId }))!.outcome).toBe('succeeded');
      gate.resolve();
      await started;
      expect(second.started).toMatchObject([{ kind: 'step', name: 'slow', attempt: 1, redispatch: true, idempotencyKey: first.started[0]!.idempotencyKey }]);
      expect(second.ends.map((e) => e.end.outcome)).toEqual(['ok']);
      expect(first.ends.map((e) => e.end.outcome)).toEqual(['abandoned']);
    });

    it('without a tracer a tool gets no traceparent and the http tool sends none', async () => {
      seen.length = 0;
      received.length = 0;
      const { engine } = await setup([wf, probe]);
      await engine.runStart({ namespace: NS, workflowName: 'traced', input: { url }, execute: true });
      expect(seen).toEqual([undefined]);
      expect(received).toHaveLength(1);
      expect(received[0]!.traceparent).toBeUndefined();
    });
  });
}
