import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ModelDeltaKind, RunStatus, type ModelDelta, type RunEvent } from '../../src/gen/waymark/v1/run_pb.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { Registry } from '../../src/engine/registry.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { apiHarness, json, plain, type ApiHarness } from './api-harness.js';
import { flowMessage } from '../flows/flow-fixtures.js';

/*
 * Token streams over StreamRunEvents (docs/agents.md "Token streams"): a streamed model call's
 * deltas, opt-in, each after its call's running entry and before its result, the text they make
 * equal to the journaled text; a resume from (seq, offset) gets the rest once; replay publishes
 * nothing.
 */

const answerThenApprove = defineWorkflow({ name: 'answer-then-approve', input: z.object({ q: z.string() }) }, async (ctx, { q }) => {
  const answer = await ctx.agent(q, { model: 'scripted:echo' });
  const decision = await ctx.approve({ title: 'Send it?' });
  return { text: answer.text, approved: decision.approved };
});

function harness(): ApiHarness {
  const registry = new Registry({ agent: createAgentRuntime({ env: {} }) }).register(answerThenApprove);
  return apiHarness({ registry });
}

async function events(h: ApiHarness, runId: string, request: { includeDeltas?: boolean; afterSeq?: bigint; afterDeltaOffset?: bigint } = {}): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const { event } of h.runs.streamRunEvents({ runId, followSuspended: false, ...request })) out.push(event!);
  return out;
}

function deltasOf(list: RunEvent[]): ModelDelta[] {
  return list.flatMap((e) => (e.body.case === 'modelDelta' ? [e.body.value] : []));
}

describe('StreamRunEvents with include_deltas', () => {
  it("streams a model call's deltas between its running entry and its result; without the opt-in, none", async () => {
    const h = harness();
    const q = 'why is the sky blue on a clear day';
    const { run } = await h.runs.startRun({ workflow: 'answer-then-approve', input: json({ q }), wait: true });
    expect(run!.status).toBe(RunStatus.SUSPENDED);
    const all = await events(h, run!.id, { includeDeltas: true });
    const deltas = deltasOf(all);
    const modelEntries = all.filter((e) => e.body.case === 'entry' && e.body.value.kind === 'model');
    expect(modelEntries).toHaveLength(2);
    const [intent, result] = modelEntries;
    const positions = all.map((e, i) => (e.body.case === 'modelDelta' ? i : -1)).filter((i) => i >= 0);
    expect(positions.length).toBeGreaterThan(3);
    expect(Math.min(...positions)).toBeGreaterThan(all.indexOf(intent!));
    expect(Math.max(...positions)).toBeLessThan(all.indexOf(result!));
    expect(deltas.map((d) => Number(d.offset))).toEqual(deltas.map((_, i) => i));
    expect(deltas.every((d) => d.callSeq === intent!.seq && d.attempt === deltas[0]!.attempt)).toBe(true);
    expect(deltas[0]!.kind).toBe(ModelDeltaKind.ATTEMPT_START);
    expect(deltas.map((d) => d.index)).toEqual(deltas.map((_, i) => i));
    const text = deltas.filter((d) => d.kind === ModelDeltaKind.TEXT).map((d) => d.text).join('');
    const record = result!.body.case === 'entry' ? (plain(result!.body.value.payload) as { text: string }) : null;
    expect(text).toBe(`echo: ${q}`);
    expect(record?.text).toBe(text);
    expect(deltasOf(await events(h, run!.id))).toEqual([]);
  });

  it("a flow's agent node streams its model call's deltas as ctx.agent does", async () => {
    const h = harness();
    await h.flows.registerFlow({ flow: flowMessage({
      name: 'ask-flow',
      stateSchema: { type: 'object', properties: { q: { type: 'string' }, answer: { type: 'string' } } },
      start: 'think',
      nodes: [
        { id: 'think', agent: { model: 'scripted:echo', prompt: '{{ state.q }}', into: 'answer' } },
        { id: 'out', end: { output: '{{ state.answer }}' } },
      ],
      edges: [{ from: 'think', to: 'out' }],
    }) });
    const q = 'what makes a sunset red';
    const { run } = await h.runs.startRun({ workflow: 'ask-flow', input: json({ q }), wait: true });
    expect(run!.status).toBe(RunStatus.SUCCEEDED);
    const all = await events(h, run!.id, { includeDeltas: true });
    const deltas = deltasOf(all);
    const model = all.filter((e) => e.body.case === 'entry' && e.body.value.kind === 'model');
    expect(model).toHaveLength(2);
    expect(deltas[0]?.kind).toBe(ModelDeltaKind.ATTEMPT_START);
    expect(deltas.every((d) => d.callSeq === model[0]!.seq)).toBe(true);
    expect(deltas.filter((d) => d.kind === ModelDeltaKind.TEXT).map((d) => d.text).join('')).toBe(`echo: ${q}`);
    expect(deltasOf(await events(h, run!.id))).toEqual([]);
  });

  it('resumes from (after_seq, after_delta_offset) with the rest once; a replay of the call publishes no delta', async () => {
    const h = harness();
    const { run } = await h.runs.startRun({ workflow: 'answer-then-approve', input: json({ q: 'one two three four' }), wait: true });
    const all = await events(h, run!.id, { includeDeltas: true });
    const cut = all.findIndex((e) => e.body.case === 'modelDelta' && e.body.value.index === 2);
    const seen = all.slice(0, cut + 1);
    const lastSeq = seen.reduce((m, e) => (e.seq > m ? e.seq : m), -1n);
    const lastOffset = deltasOf(seen).at(-1)!.offset;
    const rest = await events(h, run!.id, { includeDeltas: true, afterSeq: lastSeq, afterDeltaOffset: lastOffset });
    expect([...seen, ...rest]).toEqual(all);
    // The approval resumes the run: its execution replays the model call from the journal.
    const before = deltasOf(all).length;
    const approvals = await h.signals.listApprovals({});
    const ended = h.executionEnded(run!.id, ['succeeded']);
    await h.signals.decideApproval({ id: approvals.approvals[0]!.id, approve: true, by: 'ann' });
    await ended;
    const after = await events(h, run!.id, { includeDeltas: true });
    expect(deltasOf(after)).toHaveLength(before);
    expect(after.at(-1)!.body.case).toBe('statusChanged');
  });
});
