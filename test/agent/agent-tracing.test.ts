import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import type { EffectAttempt, EffectEnd, EffectSpan, EffectTracer } from '../../src/engine/runtime/effect-tracer.js';
import { Registry } from '../../src/engine/registry.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { defineTool, defineWorkflow } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { NS, TTL } from './agent-harness.js';

/*
 * ctx.agent's effects as the engine reports them to a tracer (docs/tracing.md "Spans per effect"):
 * each model call ends with the token counts journaled with it, and each tool call the model asked
 * for carries the model's id for it (`gen_ai.tool.call.id`), which is never journaled.
 */

class RecordingTracer implements EffectTracer {
  readonly ends: { effect: EffectAttempt; end: EffectEnd }[] = [];
  effectStarted(effect: EffectAttempt): EffectSpan {
    return { traceparent: `00-${'ef'.repeat(16)}-${'1'.repeat(16)}-01`, within: (fn) => fn(), ended: (end) => void this.ends.push({ effect, end }) };
  }
  attemptWithin<T>(_runId: string, fn: () => Promise<T>): Promise<T> {
    return fn();
  }
  taskTraceparent(): string {
    throw new Error('no remote tasks here');
  }
  taskEnded(): void {}
}

describe('an agent run under a tracer', () => {
  it('reports model calls with their journaled usage and tool calls with the model\'s call id', async () => {
    const lookup = defineTool({ name: 'lookup', description: 'looks an order up', input: z.object({ order: z.string() }), execute: ({ order }) => ({ order, found: true }) });
    const wf = defineWorkflow({ name: 'traced-agent', input: z.object({}) }, async (ctx) => ctx.agent('Look order A-1 up.', { model: 'scripted:auto', tools: [lookup] }));
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const tracer = new RecordingTracer();
    const registry = new Registry({ agent: createAgentRuntime({ maxRetries: 0 }) }).register(wf, lookup);
    const engine = new RunEngine({ store, registry, holder: 'worker-1', leaseTtlMs: TTL, clock: clock.now, tracer });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'traced-agent', input: {}, execute: true });
    expect(run.status).toBe('SUCCEEDED');

    const entries = await store.journalList({ runId: run.id });
    const models = entries.filter((e) => e.kind === 'model' && e.status === 'ok');
    const reportedModels = tracer.ends.filter((e) => e.effect.kind === 'model');
    expect(reportedModels.map((e) => e.effect.name)).toEqual(models.map(() => 'scripted:auto'));
    expect(reportedModels.map((e) => e.end.usage)).toEqual(models.map((m) => m.usage));
    expect(models[0]!.usage!.inputTokens).toBeGreaterThan(0);

    const asked = (models[0]!.payload as { toolCalls: { toolCallId: string; toolName: string }[] }).toolCalls;
    expect(asked.map((c) => c.toolName)).toEqual(['lookup']);
    const tools = tracer.ends.filter((e) => e.effect.kind === 'tool');
    expect(tools.map((e) => [e.effect.name, e.effect.toolCallId, e.end.outcome])).toEqual([['lookup', asked[0]!.toolCallId, 'ok']]);
    // The id is the model's, not the call's identity: nothing of it is journaled on the tool's entries.
    expect(JSON.stringify(entries.filter((e) => e.kind === 'tool'))).not.toContain(asked[0]!.toolCallId);
  });
});
