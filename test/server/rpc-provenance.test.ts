import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { Registry } from '../../src/engine/registry.js';
import { loadUserModule } from '../../src/engine/user-module.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { ProvenanceModelCallStatus, ProvenanceToolResultStatus } from '../../src/gen/waymark/v1/run_service_pb.js';
import { AGENT_WORKFLOWS, fakeModelEnv } from '../agent/agent-harness.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { apiHarness, failure, json, plain, shapeOf } from './api-harness.js';

/*
 * GetRunProvenance over the in-process API: an agent that looked something up and answered, with
 * the model calls and the tool result its answer drew on, as journal seqs; and the run's spend.
 */
let server: FakeOpenAIServer;
beforeAll(async () => {
  server = await FakeOpenAIServer.start(({ step }) => (step === 1
    ? { toolCalls: [{ name: 'lookup', arguments: { topic: 'launch' } }], usage: { prompt: 100, completion: 10 } }
    : { text: 'Launch is on Monday.', usage: { prompt: 200, completion: 20 } }));
  process.env.FAKE_EFFECTS_URL = `${server.baseURL}/effects`;
});
afterAll(async () => server?.close());

async function harness() {
  const registry = new Registry({ agent: createAgentRuntime({ env: fakeModelEnv(server), maxRetries: 0 }) });
  await loadUserModule(AGENT_WORKFLOWS, registry);
  return apiHarness({ registry });
}

describe('GetRunProvenance', () => {
  it('returns each agent\'s answer and the model calls and tool results it drew on', async () => {
    const t = await harness();
    const { run } = await t.runs.startRun({ workflow: 'crash-research', input: json({ question: 'when is launch?' }), wait: true });
    expect(run?.status).toBe(RunStatus.SUCCEEDED);

    const { provenance } = await t.runs.getRunProvenance({ runId: run!.id });
    expect(provenance).toMatchObject({ runId: run!.id, workflowName: 'crash-research', status: RunStatus.SUCCEEDED, children: [] });
    expect(provenance!.agents).toHaveLength(1);
    const agent = provenance!.agents[0]!;
    expect(agent).toMatchObject({ agentType: 'researcher', model: 'compatible:fake-model', answer: 'Launch is on Monday.' });
    expect(agent.modelCalls.map((m) => [m.step, m.status, m.usage?.inputTokens])).toEqual([
      [1, ProvenanceModelCallStatus.OK, 100n], [2, ProvenanceModelCallStatus.OK, 200n],
    ]);
    expect(agent.toolResults).toHaveLength(1);
    const lookup = agent.toolResults[0]!;
    expect(lookup).toMatchObject({ toolName: 'lookup', status: ProvenanceToolResultStatus.OK, requestedBySeq: agent.modelCalls[0]!.seq });
    expect(plain(lookup.input)).toEqual({ topic: 'launch' });
    expect(plain(lookup.value)).toMatchObject({ topic: 'launch', note: 'launch notes' });
    // The answer drew on both model calls and the lookup, by journal seq.
    expect(agent.answerSeq).toBe(agent.modelCalls[1]!.seq);
    expect(agent.drewOnModelCallSeqs).toEqual(agent.modelCalls.map((m) => m.seq));
    expect(agent.drewOnToolResultSeqs).toEqual([lookup.seq]);
    // The seqs name real journal entries.
    const { entries } = await t.runs.getJournal({ runId: run!.id });
    expect(entries.find((e) => e.seq === lookup.seq)).toMatchObject({ kind: 'tool', name: 'lookup' });

    // Spend: priced calls summed (the same figure GetRun reports as spent_usd).
    expect(provenance!.spend!.pricedCalls).toBe(2);
    expect(provenance!.spend!.totalUsd).toBeGreaterThan(0);
    expect(agent.costUsd).toBe(provenance!.spend!.ownUsd);
    expect((await t.runs.getRun({ runId: run!.id })).run!.spentUsd).toBe(provenance!.spend!.totalUsd);
  });

  it('is fail-closed like GetRun: an unknown run is NOT_FOUND, a malformed id INVALID_ARGUMENT', async () => {
    const t = await harness();
    expect(shapeOf(await failure(t.runs.getRunProvenance({ runId: '018f0000-0000-7000-8000-000000000000' })))).toMatchObject({ code: Code.NotFound, reason: 'RUN_NOT_FOUND' });
    expect(shapeOf(await failure(t.runs.getRunProvenance({ runId: 'nope' }))).fields).toEqual(['run_id']);
  });
});
