import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { agentEngine, fakeModelEnv, NS, shape } from './agent-harness.js';

/*
 * Dry runs call no model (DESIGN "only tools declared mutating: false run and model calls are
 * skipped"): each model call of the agent is journaled with the `__dryRun` marker, the provider
 * gets no request, and the agent's turn ends at once, deterministically.
 */
let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start(() => ({ toolCalls: [{ name: 'lookup', arguments: { topic: 'launch' } }] }));
  process.env.FAKE_EFFECTS_URL = `${server.baseURL}/effects`;
});
afterAll(async () => server?.close());

describe('agents in a dry run', () => {
  it('make no model request: the model entry carries __dryRun, nothing is spent, and the turn ends', async () => {
    const { engine, store } = await agentEngine({ runtime: { env: fakeModelEnv(server) } });
    const started = await engine.runStart({ namespace: NS, workflowName: 'publisher', input: { question: 'dry-case' }, dryRun: true, execute: true });
    expect(started.execution!.run!.status).toBe('SUCCEEDED');
    expect(started.execution!.run!.output).toEqual({ answer: '', toolCalls: [] });
    expect(server.chats).toHaveLength(0);

    const entries = await store.journalList({ runId: started.run.id });
    expect(shape(entries)).toEqual(['running model compatible:fake-model', 'ok model compatible:fake-model']);
    const ok = entries.find((e) => e.kind === 'model' && e.status === 'ok')!;
    expect(ok.payload).toMatchObject({ __dryRun: true, toolCalls: [], messages: [] });
    expect(ok.costUsd).toBeNull();
    expect(server.effects).toHaveLength(0);
  });
});
