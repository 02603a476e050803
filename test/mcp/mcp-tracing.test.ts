import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { Registry } from '../../src/engine/registry.js';
import type { EffectAttempt, EffectSpan, EffectTracer } from '../../src/engine/runtime/effect-tracer.js';
import { NS } from '../engine/harness.js';
import { allowRule, closeMcpEngines, deliveriesLog, mcpEngine, startHttpMcpServer } from './mcp-fixture.js';

/*
 * An MCP tool call's trace context (docs/tracing.md "Propagation"): with a tracer, the call's
 * attempt is reported as a live `tool` effect and the server receives the attempt span's
 * `traceparent` in the request's `_meta`, as OpenTelemetry's MCP conventions propagate it; without
 * one, nothing is sent. The counting server's deliveries file is the oracle.
 */

const log = deliveriesLog();
let http: Awaited<ReturnType<typeof startHttpMcpServer>>;

beforeAll(async () => {
  http = await startHttpMcpServer(log.file);
});
afterAll(async () => {
  await closeMcpEngines();
  await http.stop();
  log.remove();
});

class RecordingTracer implements EffectTracer {
  readonly started: EffectAttempt[] = [];
  effectStarted(effect: EffectAttempt): EffectSpan {
    const n = this.started.push(effect);
    return { traceparent: `00-${'de'.repeat(16)}-${n.toString(16).padStart(16, '0')}-01`, within: (fn) => fn(), ended: () => {} };
  }
  attemptWithin<T>(_runId: string, fn: () => Promise<T>): Promise<T> {
    return fn();
  }
  taskTraceparent(): string {
    throw new Error('no remote tasks here');
  }
  taskEnded(): void {}
}

const wf = defineWorkflow({ name: 'mcp-traced', input: z.object({ order: z.string() }) }, async (ctx, { order }) => ctx.tool('shop.refund', { order, amount: 3 }));

describe('MCP tool calls and trace context', () => {
  it('a traced call sends its attempt span as _meta.traceparent; an untraced one sends none', async () => {
    const tracer = new RecordingTracer();
    const traced = await mcpEngine(new Registry().register(wf), http.url, { shop: { tools: { refund: allowRule } } }, {}, tracer);
    const { run } = await traced.engine.runStart({ namespace: NS, workflowName: 'mcp-traced', input: { order: 'o-traced' }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(tracer.started.map((e) => `${e.kind} ${e.name}`)).toEqual(['step mcp:shop:tools/list', 'tool shop.refund']);
    const [delivery] = log.of('refund').filter((d) => d.args.order === 'o-traced');
    expect(delivery!.traceparent).toBe(`00-${'de'.repeat(16)}-0000000000000002-01`);
    expect(delivery!.key).toBe(tracer.started[1]!.idempotencyKey);

    const plain = await mcpEngine(new Registry().register(wf), http.url, { shop: { tools: { refund: allowRule } } });
    await plain.engine.runStart({ namespace: NS, workflowName: 'mcp-traced', input: { order: 'o-plain' }, execute: true });
    expect(log.of('refund').find((d) => d.args.order === 'o-plain')!.traceparent).toBeNull();
  });
});
