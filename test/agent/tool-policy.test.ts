import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runProvenance } from '../../src/agent/provenance.js';
import { FakeOpenAIServer, type ChatRequest } from '../support/fake-openai-server.js';
import { agentEngine, fakeModelEnv, NS, shape } from './agent-harness.js';

/*
 * Tool policy inside an agent, through the real provider path (@ai-sdk/openai-compatible over HTTP
 * to a fake server): `ask` parks the run mid-turn and the same turn continues after the decision
 * without repeating a model call; `deny` (by policy or by a person) reaches the model as a value.
 */
const toolMessages = (chat: ChatRequest) => chat.body.messages.filter((m) => m.role === 'tool').map((m) => ({ id: m.tool_call_id, content: JSON.parse(String(m.content)) }));

let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start(({ step }) => {
    if (step === 1) return { toolCalls: [{ name: 'lookup', arguments: { topic: 'launch' } }] };
    if (step === 2) return { toolCalls: [{ name: 'wipe', arguments: { all: true } }, { name: 'publish', arguments: { title: 'Launch day' } }] };
    return { text: 'Done.' };
  });
  process.env.FAKE_EFFECTS_URL = `${server.baseURL}/effects`;
});
afterAll(async () => server?.close());

async function parkedRun(question: string) {
  const ctx = await agentEngine({ runtime: { env: fakeModelEnv(server) } });
  const started = await ctx.engine.runStart({ namespace: NS, workflowName: 'publisher', input: { question }, execute: true });
  return { ...ctx, started, runId: started.run.id };
}

const chatsOf = (question: string) => server.chats.filter((c) => JSON.stringify(c.body.messages[0]).includes(question));

describe('tool policy inside an agent', () => {
  it('ask parks the run mid-turn; after approval the same turn continues without repeating a model call', async () => {
    const q = 'approve-case';
    const { engine, store, started, runId } = await parkedRun(q);
    expect(started.run.status).toBe('SUSPENDED');
    expect(started.waitingOn).toHaveLength(1);
    expect(started.waitingOn[0]).toMatchObject({ kind: 'approval', name: 'tool:publish' });
    expect(chatsOf(q).map((c) => c.step)).toEqual([1, 2]);

    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'r-approve' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toEqual({ answer: 'Done.', toolCalls: ['lookup:ok', 'wipe:denied', 'publish:ok'] });
    // Steps 1 and 2 were answered from the journal on resume: each reached the provider once.
    expect(chatsOf(q).map((c) => c.step)).toEqual([1, 2, 3]);
    // Each tool ran once, with its idempotency key (derived from the run id), though the body replayed.
    const mine = server.effects.filter((e) => e.idempotencyKey?.startsWith(`${runId}:`));
    expect(mine.map((e) => e.name)).toEqual(['lookup', 'publish']);

    const entries = await store.journalList({ runId });
    // The model listed wipe before publish: the journal has them in that order.
    expect(shape(entries)).toEqual([
      'running model compatible:fake-model', 'ok model compatible:fake-model',
      'ok tool lookup',
      'running model compatible:fake-model', 'ok model compatible:fake-model',
      'ok tool wipe',
      'suspended approval tool:publish', 'resolved approval tool:publish',
      'running tool publish', 'ok tool publish',
      'running model compatible:fake-model', 'ok model compatible:fake-model',
    ]);
    expect(entries.filter((e) => e.status === 'error')).toEqual([]);
    const third = chatsOf(q).find((c) => c.step === 3)!;
    expect(toolMessages(third).map((m) => m.content)).toContainEqual({
      __denied: true, toolName: 'wipe', deniedBy: 'policy', message: 'tool "wipe" is not allowed to run (its policy is deny)',
    });
  });

  it('a person denying the call returns __denied to the model and the turn goes on; nothing is an error', async () => {
    const q = 'deny-case';
    const { engine, store, started, runId } = await parkedRun(q);
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: false, by: 'bob', comment: 'not today', requestId: 'r-deny' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toMatchObject({ toolCalls: ['lookup:ok', 'wipe:denied', 'publish:denied'] });
    expect(chatsOf(q).map((c) => c.step)).toEqual([1, 2, 3]);
    const third = chatsOf(q).find((c) => c.step === 3)!;
    expect(toolMessages(third).map((m) => m.content)).toContainEqual({ __denied: true, toolName: 'publish', deniedBy: 'bob', message: 'not today' });
    expect(server.effects.some((e) => JSON.stringify(e.body).includes('Launch day') && e.idempotencyKey?.startsWith(runId))).toBe(false);
    const entries = await store.journalList({ runId });
    expect(entries.filter((e) => e.status === 'error')).toEqual([]);

    const prov = await runProvenance({ store, runId, namespace: NS });
    expect(prov.agents).toHaveLength(1);
    const agent = prov.agents[0]!;
    expect(agent).toMatchObject({ agentType: 'publisher', model: 'compatible:fake-model', answer: 'Done.' });
    expect(agent.toolResults.map((t) => [t.toolName, t.status, t.deniedBy ?? null])).toEqual([
      ['lookup', 'ok', null], ['wipe', 'denied', 'policy'], ['publish', 'denied', 'bob'],
    ]);
    expect(agent.drewOn.modelCalls).toHaveLength(3);
    expect(agent.drewOn.toolResults).toHaveLength(3);
  });

  it('model call entries carry usage and cost, and the result sums them', async () => {
    const q = 'usage-case';
    const { engine, store, started, runId } = await parkedRun(q);
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'r-u' });
    await engine.runExecutePending();
    const models = (await store.journalList({ runId })).filter((e) => e.kind === 'model' && e.status === 'ok');
    // The fake server reports 100 x step prompt tokens and 20 completion tokens; $1 per million each.
    expect(models.map((e) => e.usage)).toEqual([
      { inputTokens: 100, outputTokens: 20, totalTokens: 120 },
      { inputTokens: 200, outputTokens: 20, totalTokens: 220 },
      { inputTokens: 300, outputTokens: 20, totalTokens: 320 },
    ]);
    expect(models.map((e) => e.costUsd)).toEqual([0.00012, 0.00022, 0.00032]);
    expect(models[0]!.payload).toMatchObject({ model: 'compatible:fake-model', provider: 'compatible.chat', modelId: 'fake-model', finishReason: 'tool-calls', step: 1 });
    expect((await store.journalList({ runId })).find((e) => e.kind === 'model' && e.status === 'running')!.payload)
      .toMatchObject({ model: 'compatible:fake-model', agentType: 'publisher', step: 1, requestDigest: expect.stringMatching(/^[0-9a-f]{64}$/) });
  });
});
