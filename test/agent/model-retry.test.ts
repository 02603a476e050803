import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock } from '../engine/harness.js';
import { FakeOpenAIServer, type FakeReply } from '../support/fake-openai-server.js';
import { fakeModelEnv, NS, TTL } from './agent-harness.js';

/*
 * Model calls retry transient provider errors durably (docs/workflows.md "Retries and timeouts"):
 * each attempt is a journaled model entry under one idempotency key, the wait a backoff timer no
 * shorter than the provider's Retry-After; a request the provider refuses for good fails at once.
 * The provider is a real OpenAI-compatible HTTP endpoint on loopback, called through the AI SDK.
 */

const replies = new Map<string, FakeReply[]>();
let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start((req) => {
    const prompt = JSON.stringify(req.body.messages.at(-1)?.content ?? '');
    const key = [...replies.keys()].find((k) => prompt.includes(k));
    return (key ? replies.get(key)!.shift() : undefined) ?? { text: 'the answer' };
  });
});
afterAll(() => server?.close());

const asks = defineWorkflow({ name: 'asks', input: z.object({ q: z.string() }) }, async (ctx, { q }) => {
  try {
    return (await ctx.agent(q, { model: 'compatible:fake-model', maxSteps: 1, retry: { maxAttempts: 3, initialInterval: '1s' } })).text;
  } catch (e) {
    return { failed: (e as Error).name, errorName: (e as { errorName?: string }).errorName };
  }
});

function setup() {
  const clock = new FakeClock();
  const store = new MemoryStore({ clock: clock.now });
  const registry = new Registry({ agent: createAgentRuntime({ env: fakeModelEnv(server) }) }).register(asks);
  const engine = new RunEngine({ store, registry, holder: 'worker-1', leaseTtlMs: TTL, clock: clock.now });
  return { clock, store, engine };
}

async function drive(engine: RunEngine, clock: FakeClock): Promise<void> {
  for (let i = 0; i < 5; i++) {
    clock.advance(120_000);
    if ((await engine.suspensionsResolveDue({ limit: 10 })).resolved.length === 0) return;
    await engine.runExecutePending();
  }
}

describe('model calls retry transient provider errors durably', () => {
  it('429 (Retry-After 5) then 503 then an answer: three model attempts, one key, the first wait the provider\'s', async () => {
    replies.set('q-transient', [{ error: { status: 429, headers: { 'retry-after': '5' } } }, { error: { status: 503 } }]);
    const { engine, store, clock } = setup();
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'asks', input: { q: 'q-transient' }, execute: true });
    expect(run.status).toBe('SUSPENDED');
    await drive(engine, clock);
    const final = await store.runGet({ runId: run.id, namespace: NS });
    expect(final.status).toBe('SUCCEEDED');
    expect(final.output).toBe('the answer');
    const entries = await store.journalList({ runId: run.id });
    const model = entries.filter((e) => e.kind === 'model');
    expect(model.filter((e) => e.status === 'running').map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(model.filter((e) => e.status === 'suspended').map((e) => (e.payload as { delayMs: number }).delayMs)).toEqual([5000, 2000]);
    const chats = server.chats.filter((c) => JSON.stringify(c.body.messages).includes('q-transient'));
    expect(chats).toHaveLength(3);
    expect(new Set(chats.map((c) => c.idempotencyKey)).size).toBe(1);
    expect(chats[0]!.idempotencyKey).toBe(model[0]!.idempotencyKey);
  });

  it('a 400 is not transient: one attempt, and the agent\'s caller gets the provider\'s error', async () => {
    replies.set('q-bad', [{ error: { status: 400 } }]);
    const { engine, store } = setup();
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'asks', input: { q: 'q-bad' }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toEqual({ failed: 'EffectFailedError', errorName: 'AI_APICallError' });
    const model = (await store.journalList({ runId: run.id })).filter((e) => e.kind === 'model');
    expect(model.map((e) => `${e.status} ${e.attempt}`)).toEqual(['running 1', 'error 1']);
  });
});
