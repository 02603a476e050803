import { createClient } from '@connectrpc/connect';
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createWaymarkWorker, fromValue, NonRetryableToolError, TaskLost, toValue, toWaymarkError, type WaymarkWorker } from '../../clients/ts/src/index.js';
import { WorkerService } from '../../src/gen/waymark/v1/worker_service_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { Registry } from '../../src/engine/registry.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { until } from '../support/until.js';
import { apiHarness, type ApiHarness } from './api-harness.js';

/*
 * WorkerService in process (docs/workers.md): a remote tool call parks its run, a worker (the
 * TypeScript SDK) serves it, the result is journaled once; a stale holder is refused; GetRun says
 * what a call waits for; an agent's model sees the declared schema and an `ask` tool parks first.
 */

const order = z.object({ order: z.string(), amount: z.number() });
const remoteRefund = defineWorkflow({ name: 'remote-refund', input: order }, async (ctx, input) => ctx.tool('charge_back', input));
const caught = defineWorkflow({ name: 'remote-caught', input: order }, async (ctx, input) => {
  try {
    return await ctx.tool('charge_back', input);
  } catch (error) {
    return { failed: (error as Error).message };
  }
});

const workers: WaymarkWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
});

function chargeBackWorker(h: ApiHarness, execute: (input: z.infer<typeof order>, key: string) => unknown, extra: { policy?: 'ask' } = {}): WaymarkWorker {
  const worker = createWaymarkWorker({ transport: h.transport, pollWaitMs: 200, workerId: `w-${workers.length + 1}` }).tool({
    name: 'charge_back', description: 'Refunds an order.', input: order, output: z.object({ refunded: z.number() }),
    heartbeatTimeoutMs: 600, ...extra,
    execute: (input, ctx) => execute(input, ctx.idempotencyKey),
  });
  workers.push(worker);
  void worker.run();
  return worker;
}

async function served(h: ApiHarness, workersServing: number): Promise<void> {
  const service = createClient(WorkerService, h.transport);
  await until(`charge_back served by ${workersServing}`, async () => {
    const { tools } = await service.listTools({});
    return tools.find((t) => t.declaration?.name === 'charge_back' && t.liveWorkers === workersServing);
  });
}

async function ended(h: ApiHarness, runId: string) {
  return until(`run ${runId} ends`, async () => {
    const { run } = await h.runs.getRun({ runId });
    return run && [RunStatus.SUCCEEDED, RunStatus.FAILED].includes(run.status) ? run : undefined;
  });
}

describe('remote tools over WorkerService', () => {
  it('a remote call parks the run; the worker result is journaled once and the run continues', async () => {
    const h = apiHarness({ items: [remoteRefund] });
    const keys: string[] = [];
    chargeBackWorker(h, (input, key) => {
      keys.push(key);
      return { refunded: input.amount };
    });
    await served(h, 1);
    const started = await h.runs.startRun({ workflow: 'remote-refund', input: toValue({ order: 'o-1', amount: 12.5 }), wait: true });
    const run = await ended(h, started.run!.id);
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    expect(fromValue(run.output)).toEqual({ refunded: 12.5 });
    expect(keys).toHaveLength(1);
    const entries = await h.store.journalList({ runId: run.id });
    const tool = entries.filter((e) => e.kind === 'tool');
    // One intent (the suspended entry, carrying the idempotency key) and one result.
    expect(tool.map((e) => e.status)).toEqual(['suspended', 'resolved']);
    expect(tool[0]!.idempotencyKey).toBe(keys[0]);
    expect(tool[1]).toMatchObject({ refSeq: tool[0]!.seq, payload: { source: 'worker', value: { refunded: 12.5 } } });
    const { tools } = await createClient(WorkerService, h.transport).listTools({});
    expect(tools.find((t) => t.declaration?.name === 'charge_back')).toMatchObject({ remote: true, liveWorkers: 1, workers: ['w-1'] });
    expect(tools.find((t) => t.declaration?.name === 'echo')).toMatchObject({ remote: false, liveWorkers: 0 });
  });

  it('a non-retryable failure fails the call at once; the workflow sees it', async () => {
    const h = apiHarness({ items: [caught] });
    let calls = 0;
    chargeBackWorker(h, () => {
      calls++;
      throw new NonRetryableToolError('card closed');
    });
    await served(h, 1);
    const started = await h.runs.startRun({ workflow: 'remote-caught', input: toValue({ order: 'o-2', amount: 1 }), wait: true });
    const run = await ended(h, started.run!.id);
    expect(fromValue(run.output)).toMatchObject({ failed: expect.stringContaining('card closed') });
    expect(calls).toBe(1);
  });

  it('with no worker connected the call waits durably and GetRun says what for', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = new MemoryStore({ clock: () => new Date(now) });
    const h = apiHarness({ store, items: [remoteRefund] });
    const service = createClient(WorkerService, h.transport);
    await service.registerWorker({
      workerId: 'gone', workerTtl: { seconds: 1n, nanos: 0 },
      tools: [{ name: 'charge_back', description: 'Refunds an order.', inputSchema: toValue(order.toJSONSchema() as never) }],
    });
    now += 2_000;
    const started = await h.runs.startRun({ workflow: 'remote-refund', input: toValue({ order: 'o-3', amount: 3 }), wait: true });
    expect(started.run!.status).toBe(RunStatus.SUSPENDED);
    const { waitingOn } = await h.runs.getRun({ runId: started.run!.id });
    expect(waitingOn).toHaveLength(1);
    expect(waitingOn[0]).toMatchObject({ kind: 'tool', name: 'charge_back', liveWorkers: 0, detail: 'no worker serves tool charge_back: the call waits until one connects (waymark tools list)' });
    // Arguments the declared schema refuses fail before anything is journaled.
    const bad = await h.runs.startRun({ workflow: 'remote-refund', input: toValue({ order: 'o-4', amount: 'x' } as never), wait: true }).catch((e: unknown) => e);
    expect(String(bad)).toContain('amount');
  });

  it("a stale holder's result is refused (TASK_LOST) and not journaled; the current holder's is", async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const store = new MemoryStore({ clock: () => new Date(now) });
    const h = apiHarness({ store, items: [remoteRefund] });
    const service = createClient(WorkerService, h.transport);
    const tools = [{ name: 'charge_back', description: 'Refunds an order.', heartbeatTimeout: { seconds: 1n, nanos: 0 } }];
    await service.registerWorker({ workerId: 'a', tools });
    await service.registerWorker({ workerId: 'b', tools });
    const started = await h.runs.startRun({ workflow: 'remote-refund', input: toValue({ order: 'o-5', amount: 5 }), wait: true });
    const a = (await service.pollTask({ workerId: 'a', wait: { seconds: 0n, nanos: 1_000_000 } })).task!;
    expect(a).toMatchObject({ runId: started.run!.id, attempt: 1, fencingToken: 1n });
    expect((await service.pollTask({ workerId: 'b', wait: { seconds: 0n, nanos: 1_000_000 } })).task).toBeUndefined();
    now += 1_500; // a stops heartbeating: its claim lapses
    const b = (await service.pollTask({ workerId: 'b', wait: { seconds: 0n, nanos: 1_000_000 } })).task!;
    expect(b).toMatchObject({ taskId: a.taskId, attempt: 2, fencingToken: 2n, idempotencyKey: a.idempotencyKey });

    const stale = await service.completeTask({ workerId: 'a', taskId: a.taskId, fencingToken: a.fencingToken, outcome: { case: 'output', value: toValue({ by: 'a' })! } }).catch((e: unknown) => e);
    expect(toWaymarkError(stale)).toBeInstanceOf(TaskLost);
    const beat = await service.heartbeat({ workerId: 'a', taskId: a.taskId, fencingToken: a.fencingToken }).catch((e: unknown) => e);
    expect(toWaymarkError(beat)).toBeInstanceOf(TaskLost);
    expect((await store.journalList({ runId: a.runId })).filter((e) => e.status === 'resolved' || e.status === 'noop')).toEqual([]);

    expect(await service.completeTask({ workerId: 'b', taskId: b.taskId, fencingToken: b.fencingToken, outcome: { case: 'output', value: toValue({ by: 'b' })! } })).toMatchObject({ applied: true });
    const run = await ended(h, a.runId);
    expect(fromValue(run.output)).toEqual({ by: 'b' });
  });

  it("an agent's model sees the declared schema; an `ask` remote tool parks, is approved, and runs once", async () => {
    const seen: LanguageModelV3CallOptions[] = [];
    const model = new MockLanguageModelV3({
      doGenerate: async (options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> => {
        seen.push(options);
        const answered = options.prompt.some((m) => m.role === 'tool');
        return {
          content: answered
            ? [{ type: 'text', text: 'Refunded.' }]
            : [{ type: 'tool-call', toolCallId: 'c1', toolName: 'charge_back', input: JSON.stringify({ order: 'o-9', amount: 9 }) }],
          finishReason: { unified: answered ? 'stop' : 'tool-calls', raw: undefined },
          usage: { inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } },
          warnings: [],
        };
      },
    });
    const agentFlow = defineWorkflow({ name: 'remote-agent', input: z.object({ q: z.string() }) }, async (ctx, { q }) => {
      const result = await ctx.agent(q, { model: 'mock:refunds', tools: ['charge_back'] });
      return { text: result.text, calls: result.toolCalls.map((c) => c.toolName) };
    });
    const registry = new Registry({ agent: createAgentRuntime({ env: {}, models: { 'mock:refunds': model }, prices: { 'mock:refunds': { input: 0, output: 0 } } }) }).register(agentFlow);
    const h = apiHarness({ registry });
    const ran: string[] = [];
    chargeBackWorker(h, (input, key) => {
      ran.push(key);
      return { refunded: input.amount };
    }, { policy: 'ask' });
    await served(h, 1);
    const started = await h.runs.startRun({ workflow: 'remote-agent', input: toValue({ q: 'refund o-9' }), wait: true });
    expect(started.run!.status).toBe(RunStatus.SUSPENDED);
    expect(started.waitingOn.map((w) => [w.kind, w.name])).toEqual([['approval', 'Allow tool "charge_back"?']]);
    expect(ran).toEqual([]);
    // The model saw the worker's declaration: its description and JSON Schema.
    const tool = seen[0]!.tools?.find((t) => t.name === 'charge_back') as { description?: string; inputSchema?: unknown } | undefined;
    expect(tool?.description).toBe('Refunds an order.');
    expect(tool?.inputSchema).toMatchObject({ type: 'object', properties: { order: { type: 'string' }, amount: { type: 'number' } } });

    await h.signals.decideApproval({ id: started.waitingOn[0]!.approvalId, approve: true, by: 'ann', requestId: 'approve-1' });
    const run = await ended(h, started.run!.id);
    expect(fromValue(run.output)).toEqual({ text: 'Refunded.', calls: ['charge_back'] });
    expect(ran).toHaveLength(1);
    const entries = await h.store.journalList({ runId: run.id });
    expect(entries.filter((e) => e.kind === 'tool').map((e) => e.status)).toEqual(['suspended', 'resolved']);
  });
});
