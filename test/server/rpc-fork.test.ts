import type { LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { Code } from '@connectrpc/connect';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fromValue, toValue } from '../../clients/ts/src/index.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { defineTool } from '../../src/engine/author/tool.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { Registry } from '../../src/engine/registry.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { EffectDifference } from '../../src/gen/waymark/v1/run_service_pb.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { EffectSink, postEffect } from '../chaos/support/effect-sink.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { apiHarness, failure, shapeOf, type ApiHarness } from './api-harness.js';
import { flowMessage } from '../flows/flow-fixtures.js';

/*
 * ForkRun and CompareRuns in process on a real PostgreSQL (docs/forks.md): a run that charged
 * (the counting sink of the chaos tests is the oracle), asked for approval and called a model is
 * forked at the model call with another model. The charge is not made again, the fork ends, the
 * two runs are linked both ways, and the comparison shows the model, tokens and cost that differ.
 */

/** A model that answers `text` with the given usage, counting its calls. */
function countingModel(text: string, inputTokens: number, outputTokens: number) {
  const calls: string[] = [];
  const model = new MockLanguageModelV3({
    doGenerate: async (options): Promise<LanguageModelV3GenerateResult> => {
      calls.push(String(options.headers?.['Idempotency-Key'] ?? ''));
      return {
        content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: undefined }, warnings: [],
        usage: { inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined } },
      };
    },
  });
  return { model, calls };
}

const order = z.object({ sink: z.string(), order: z.string() });
const charge = defineTool({
  name: 'fork_charge', description: 'Charges an order at the counting sink.', input: order,
  execute: ({ sink, order: id }, { idempotencyKey, signal }) => postEffect(sink, `${id}:charge`, idempotencyKey, signal),
});
const summarise = defineWorkflow({ name: 'fork-demo', input: order }, async (ctx, input) => {
  const charged = await ctx.tool(charge, input);
  const decision = await ctx.approve({ title: `Summarise order ${input.order}?` });
  if (!decision.approved) return { charged: charged.applied, summary: null };
  const answer = await ctx.agent(`Summarise order ${input.order}`, { model: 'mock:small', maxSteps: 1 });
  return { charged: charged.applied, summary: answer.text };
});

describe('ForkRun and CompareRuns', () => {
  let db: MigratedDatabase;
  let store: PostgresStore;
  let sink: EffectSink;
  let h: ApiHarness;
  const small = countingModel('a short summary', 10, 5);
  const large = countingModel('a longer, better summary', 40, 20);

  beforeAll(async () => {
    db = await createMigratedDatabase('waymark_fork');
    store = await PostgresStore.connect({ url: db.url, applicationName: 'fork-test', poolSize: 4 });
    sink = await EffectSink.start();
    const agent = createAgentRuntime({
      env: {}, models: { 'mock:small': small.model, 'mock:large': large.model },
      prices: { 'mock:small': { input: 1, output: 2 }, 'mock:large': { input: 10, output: 30 } },
    });
    h = apiHarness({ store, registry: new Registry({ agent }).register(summarise, charge) });
  });
  afterAll(async () => {
    await store?.close();
    await sink?.close();
    await db?.drop();
  });

  const charges = () => sink.deliveries.filter((d) => d.effect === 'o-1:charge');
  async function ended(runId: string) {
    return until(`run ${runId} ends`, async () => {
      const { run } = await h.runs.getRun({ runId });
      return run && [RunStatus.SUCCEEDED, RunStatus.FAILED].includes(run.status) ? run : undefined;
    });
  }

  it('forks at the model call with another model: the charge is made once, both runs are linked, the comparison shows what changed', async () => {
    const started = await h.runs.startRun({ workflow: 'fork-demo', input: toValue({ sink: sink.url, order: 'o-1' }), wait: true });
    expect(started.run!.status).toBe(RunStatus.SUSPENDED);
    await h.signals.decideApproval({ id: started.waitingOn[0]!.approvalId, approve: true, by: 'ann', requestId: 'ok-1' });
    const source = await ended(started.run!.id);
    expect(fromValue(source.output)).toEqual({ charged: true, summary: 'a short summary' });
    expect(charges()).toHaveLength(1);
    expect(small.calls).toHaveLength(1);

    const journal = await store.journalList({ runId: source.id });
    const modelCall = journal.find((e) => e.kind === 'model' && e.status === 'running')!;
    const modelDone = journal.find((e) => e.kind === 'model' && e.status === 'ok')!;

    // The preview: what is kept (the charge, the approval and its decision), what goes live first, what it cost.
    const dry = await h.runs.forkRun({ runId: source.id, atSeq: BigInt(modelDone.seq), model: 'mock:large', dryRun: true });
    expect(dry.run).toBeUndefined();
    expect(dry.forkSeq).toBe(BigInt(modelCall.seq));
    const preview = dry.preview!;
    expect(preview.kept).toBe(modelCall.seq - 1); // the status entry before the model call is the source's, not kept
    expect(preview.keptCostUsd).toBe(0);
    expect(preview.droppedCostUsd).toBeCloseTo(modelDone.costUsd!, 9);
    expect(preview.replay!.hits).toBe(2);
    expect(preview.replay!.items.map((i) => [i.kind, i.seq === undefined ? null : Number(i.seq)]).at(-1)).toEqual(['model', null]);
    expect(await store.runForks({ runId: source.id, namespace: 'default', limit: 10 })).toEqual([]);

    const forked = await h.runs.forkRun({ runId: source.id, atSeq: BigInt(modelCall.seq), model: 'mock:large', idempotencyKey: 'fork-large', wait: true });
    expect(forked.created).toBe(true);
    const fork = forked.run!;
    expect(fork.status).toBe(RunStatus.SUCCEEDED);
    expect(fromValue(fork.output)).toEqual({ charged: true, summary: 'a longer, better summary' });
    // The counting sink: the charge was made once, by the source; the fork kept its recorded result.
    expect(charges()).toHaveLength(1);
    expect(large.calls).toHaveLength(1);
    expect(small.calls).toHaveLength(1);
    // Its own effects have its own keys: the model call after the fork point.
    const sourceModelKey = modelCall.idempotencyKey;
    expect(large.calls[0]).not.toBe(sourceModelKey);

    // Linked both ways.
    expect(fork.forkedFromRunId).toBe(source.id);
    expect(fork.forkSeq).toBe(BigInt(modelCall.seq));
    expect(fork.labels['waymark.model']).toBe('mock:large');
    expect((await h.runs.getRun({ runId: source.id })).forks).toEqual([fork.id]);
    // The source is untouched.
    expect(await store.journalList({ runId: source.id })).toEqual(journal);

    // The same key returns the same fork and executes nothing.
    const again = await h.runs.forkRun({ runId: source.id, atSeq: BigInt(modelCall.seq), model: 'mock:large', idempotencyKey: 'fork-large', wait: true });
    expect([again.created, again.run!.id]).toEqual([false, fork.id]);
    expect(large.calls).toHaveLength(1);

    const compared = await h.runs.compareRuns({ runIdA: source.id, runIdB: fork.id });
    expect(compared.forkSeq).toBe(BigInt(modelCall.seq));
    const byKind = Object.fromEntries(compared.effects.map((e) => [e.kind, e]));
    expect(byKind.tool).toMatchObject({ difference: EffectDifference.SAME, kept: true });
    expect(byKind.approval).toMatchObject({ difference: EffectDifference.SAME, kept: true });
    const model = byKind.model!;
    expect(model).toMatchObject({ difference: EffectDifference.CHANGED, kept: false });
    expect([model.a!.model, model.b!.model]).toEqual(['mock:small', 'mock:large']);
    expect([model.a!.inputTokens, model.a!.outputTokens, model.b!.inputTokens, model.b!.outputTokens]).toEqual([10n, 5n, 40n, 20n]);
    expect(model.a!.costUsd).toBeCloseTo((10 * 1 + 5 * 2) / 1e6, 12);
    expect(model.b!.costUsd).toBeCloseTo((40 * 10 + 20 * 30) / 1e6, 12);
    expect(compared.totalsB!.costUsd).toBeGreaterThan(compared.totalsA!.costUsd);
  });

  it('a flow run forks the same: at its approval node with a denial, the kept tool node is not run again', async () => {
    await h.flows.registerFlow({ flow: flowMessage({
      name: 'fork-flow',
      stateSchema: { type: 'object', properties: { sink: { type: 'string' }, order: { type: 'string' }, charged: { type: 'object' }, decision: { type: 'object' } } },
      start: 'charge',
      nodes: [
        { id: 'charge', tool: { tool: 'fork_charge', arguments: { sink: '{{ state.sink }}', order: '{{ state.order }}' }, into: 'charged' } },
        { id: 'approve', approval: { title: 'Keep the charge for {{ state.order }}?', into: 'decision' } },
        { id: 'decided', branch: {} },
        { id: 'kept', end: { output: { status: 'kept' } } },
        { id: 'declined', end: { output: { status: 'declined', by: '{{ state.decision.by }}' } } },
      ],
      edges: [
        { from: 'charge', to: 'approve' }, { from: 'approve', to: 'decided' },
        { from: 'decided', to: 'kept', condition: 'state.decision.approved' }, { from: 'decided', to: 'declined' },
      ],
    }) });
    const flowCharges = () => sink.deliveries.filter((d) => d.effect === 'f-1:charge');
    const started = await h.runs.startRun({ workflow: 'fork-flow', input: toValue({ sink: sink.url, order: 'f-1' }), wait: true });
    expect(started.run!.status).toBe(RunStatus.SUSPENDED);
    expect(flowCharges()).toHaveLength(1);
    const approval = started.waitingOn[0]!;
    const forked = await h.runs.forkRun({ runId: started.run!.id, atSeq: approval.seq, decision: { approve: false, by: 'flo' }, wait: true });
    expect(forked.run!.status).toBe(RunStatus.SUCCEEDED);
    expect(forked.run!.forkedFromRunId).toBe(started.run!.id);
    expect(fromValue(forked.run!.output)).toEqual({ status: 'declined', by: 'flo' });
    expect(flowCharges()).toHaveLength(1);
    expect((await h.runs.getRun({ runId: started.run!.id })).forks).toEqual([forked.run!.id]);
  });

  it('a decision at the fork point: the fork continues denied, without the model call; the charge is still made once', async () => {
    const started = await h.runs.startRun({ workflow: 'fork-demo', input: toValue({ sink: sink.url, order: 'o-1' }), wait: true, idempotencyKey: 'second' });
    const approval = started.waitingOn[0]!;
    const forked = await h.runs.forkRun({ runId: started.run!.id, atSeq: approval.seq, decision: { approve: false, comment: 'not now' }, wait: true });
    expect(forked.run!.status).toBe(RunStatus.SUCCEEDED);
    expect(fromValue(forked.run!.output)).toEqual({ charged: true, summary: null });
    // The second run charged once under its own key; its fork charged nothing.
    expect(new Set(charges().map((d) => d.key)).size).toBe(2);
    expect(charges()).toHaveLength(2);
    // A decision needs an approval at the fork point; a seq past the journal is no fork point.
    expect(shapeOf(await failure(h.runs.forkRun({ runId: started.run!.id, atSeq: 1n, decision: { approve: true } })))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FORK', fields: ['decision'] });
    expect(shapeOf(await failure(h.runs.forkRun({ runId: started.run!.id, atSeq: 999n })))).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_FORK', fields: ['at_seq'] });
    expect(shapeOf(await failure(h.runs.forkRun({ runId: '018f0000-0000-7000-8000-000000000000', atSeq: 0n })))).toMatchObject({ code: Code.NotFound });
  });
});
