import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { scriptedModel } from '../../src/agent/scripted-model.js';
import { Registry } from '../../src/engine/registry.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness, FIXTURE_ITEMS, failure, json, plain, shapeOf } from '../server/api-harness.js';
import { flowMessage, type FlowJson } from './flow-fixtures.js';

/*
 * Each node kind run end to end through the API (docs/flows.md "Nodes"): parallel branches merged at
 * their join, a signal with a pinned payload schema, a bounded loop, a child flow, an agent with an
 * output schema. Every effect is an ordinary journal entry of its kind.
 */

function emitted(entries: { kind: string; payload?: unknown }[], type: string): Record<string, unknown>[] {
  return entries.filter((e) => e.kind === 'emit').map((e) => plain(e.payload as never) as Record<string, unknown>).filter((p) => p.type === type);
}

describe('flow nodes', () => {
  it('parallel: each branch runs its tools in its own scope; the join sees what every branch wrote', async () => {
    const t = apiHarness();
    const flow: FlowJson = {
      name: 'fan-out',
      stateSchema: { type: 'object', properties: { x: { type: 'number' }, left: {}, right: {} } },
      start: 'fork',
      nodes: [
        { id: 'fork', parallel: { join: 'done' } },
        { id: 'l', tool: { tool: 'echo', arguments: { side: 'left', x: '{{ state.x }}' }, into: 'left' } },
        { id: 'r', tool: { tool: 'echo', arguments: { side: 'right' }, into: 'right' } },
        { id: 'done', end: { output: { left: '{{ state.left }}', right: '{{ state.right }}' } } },
      ],
      edges: [{ from: 'fork', to: 'l' }, { from: 'fork', to: 'r' }, { from: 'l', to: 'done' }, { from: 'r', to: 'done' }],
    };
    await t.flows.registerFlow({ flow: flowMessage(flow) });
    const { run } = await t.runs.startRun({ workflow: 'fan-out', input: json({ x: 2 }), wait: true });
    expect(run?.status).toBe(RunStatus.SUCCEEDED);
    expect(plain(run!.output)).toEqual({ left: { side: 'left', x: 2 }, right: { side: 'right' } });
    const { entries } = await t.runs.getJournal({ runId: run!.id });
    const tools = entries.filter((e) => e.kind === 'tool' && e.status !== 1);
    expect(new Set(tools.map((e) => e.scope)).size).toBe(2);
  });

  it('signal: waits with the pinned payload schema (a bad payload is refused), writes the payload; a loop stops at max_visits', async () => {
    const t = apiHarness();
    const flow: FlowJson = {
      name: 'ask-until-done',
      stateSchema: { type: 'object', properties: { answer: { type: 'object' } } },
      start: 'ask',
      nodes: [
        { id: 'ask', signal: { name: 'answer', payloadSchema: { type: 'object', properties: { done: { type: 'boolean' } }, required: ['done'] }, into: 'answer' }, maxVisits: 2 },
        { id: 'check', branch: {} },
        { id: 'done', end: {} },
      ],
      edges: [{ from: 'ask', to: 'check' }, { from: 'check', to: 'done', condition: 'state.answer.done' }, { from: 'check', to: 'ask' }],
    };
    await t.flows.registerFlow({ flow: flowMessage(flow) });
    const { run } = await t.runs.startRun({ workflow: 'ask-until-done', input: json({}), wait: true });
    expect(run?.status).toBe(RunStatus.SUSPENDED);
    const bad = await failure(t.signals.sendSignal({ runId: run!.id, name: 'answer', payload: json({ done: 'yes' }), signalId: 's0' }));
    expect(shapeOf(bad).code).toBe(Code.InvalidArgument);
    let ended = t.executionEnded(run!.id);
    await t.signals.sendSignal({ runId: run!.id, name: 'answer', payload: json({ done: false }), signalId: 's1' });
    expect((await ended).outcome).toBe('suspended');
    ended = t.executionEnded(run!.id);
    await t.signals.sendSignal({ runId: run!.id, name: 'answer', payload: json({ done: false }), signalId: 's2' });
    const last = await ended;
    expect(last.outcome).toBe('failed');
    expect(last.run?.error).toMatchObject({ name: 'FlowRunError', reason: 'flow_loop_bound' });
    const { entries } = await t.runs.getJournal({ runId: run!.id });
    expect(emitted(entries, 'flow.branch').map((b) => b.taken)).toEqual(['ask', 'ask']);
  });

  it('end with continue_as_new: the run continues as new with the templated input; with output too it is refused', async () => {
    const t = apiHarness();
    const flow: FlowJson = {
      name: 'two-rounds',
      stateSchema: { type: 'object', properties: { round: { type: 'string' }, from: { type: 'string' } } },
      start: 'check',
      nodes: [
        { id: 'check', branch: {} },
        { id: 'again', end: { continueAsNew: { round: 'second', from: '{{ state.round }}' } } },
        { id: 'done', end: { output: { round: '{{ state.round }}', from: '{{ state.from }}' } } },
      ],
      edges: [{ from: 'check', to: 'done', condition: 'state.round == "second"' }, { from: 'check', to: 'again' }],
    };
    await t.flows.registerFlow({ flow: flowMessage(flow) });
    const { run } = await t.runs.startRun({ workflow: 'two-rounds', input: json({ round: 'first' }), wait: true });
    expect(run?.status).toBe(RunStatus.SUCCEEDED);
    const first = (await t.runs.getRun({ runId: run!.id })).run!;
    expect(plain(first.output)).toEqual({ continuedAsNew: first.continuedAsRunId });
    await t.engine.driver.execute({ runId: first.continuedAsRunId, namespace: 'default' });
    const second = (await t.runs.getRun({ runId: first.continuedAsRunId })).run!;
    expect([second.status, second.continuedFromRunId, plain(second.output)]).toEqual([RunStatus.SUCCEEDED, first.id, { round: 'second', from: 'first' }]);
    const both = await failure(t.flows.registerFlow({ flow: flowMessage({ ...flow, name: 'both', nodes: [
      { id: 'check', branch: {} }, { id: 'again', end: { output: {}, continueAsNew: {} } }, { id: 'done', end: {} },
    ] }) }));
    expect(shapeOf(both).code).toBe(Code.InvalidArgument);
    expect(JSON.stringify(shapeOf(both))).toMatch(/continue_as_new/);
  });

  it('child: a child node starts another flow, waits for it and writes its output', async () => {
    const t = apiHarness();
    await t.flows.registerFlow({ flow: flowMessage({
      name: 'double', stateSchema: { type: 'object', properties: { n: { type: 'number' } } }, start: 'out',
      nodes: [{ id: 'out', end: { output: { got: '{{ state.n }}' } } }],
    }) });
    await t.flows.registerFlow({ flow: flowMessage({
      name: 'parent', stateSchema: { type: 'object', properties: { n: { type: 'number' }, result: {} } }, start: 'call',
      nodes: [{ id: 'call', child: { workflow: 'double', input: { n: '{{ state.n }}' }, into: 'result' } }, { id: 'out', end: { output: '{{ state.result }}' } }],
      edges: [{ from: 'call', to: 'out' }],
    }) });
    const { run } = await t.runs.startRun({ workflow: 'parent', input: json({ n: 21 }), wait: true });
    expect(run?.status).toBe(RunStatus.SUSPENDED);
    const [child] = (await t.runs.listRuns({ parentRunId: run!.id })).runs;
    expect(child).toMatchObject({ workflowName: 'double', workflowVersion: '1' });
    const ended = t.executionEnded(run!.id);
    await t.engine.runExecutePending();
    await ended;
    expect(plain((await t.runs.getRun({ runId: run!.id })).run!.output)).toEqual({ got: 21 });
  });

  it('agent: the model call is journaled, the answer is checked against output_schema and written into state', async () => {
    // The model answers the prompt's JSON in a ```json fence, as models often do.
    const verdict = scriptedModel({ id: 'verdict', turns: [{ text: '```json\n{"priority": "high"}\n```' }] });
    const registry = new Registry({ agent: createAgentRuntime({ env: {}, maxRetries: 0, models: { 'scripted:verdict': verdict } }) }).register(...FIXTURE_ITEMS);
    const t = apiHarness({ registry });
    await t.flows.registerFlow({ flow: flowMessage({
      name: 'classify',
      stateSchema: { type: 'object', properties: { level: { type: 'string' }, verdict: { type: 'object' } } },
      start: 'think',
      nodes: [
        { id: 'think', agent: { model: 'scripted:verdict', prompt: 'How urgent is a {{ state.level }} ticket? Answer {"priority": ...}', outputSchema: { type: 'object', required: ['priority'] }, into: 'verdict' } },
        { id: 'out', end: { output: '{{ state.verdict }}' } },
      ],
      edges: [{ from: 'think', to: 'out' }],
    }) });
    const { run } = await t.runs.startRun({ workflow: 'classify', input: json({ level: 'high' }), wait: true });
    expect(run?.error).toBeUndefined();
    expect(run?.status).toBe(RunStatus.SUCCEEDED);
    expect(plain(run!.output)).toEqual({ priority: 'high' });
    const { entries } = await t.runs.getJournal({ runId: run!.id });
    expect(entries.some((e) => e.kind === 'model')).toBe(true);
    // An unknown model is refused at registration, with its path.
    const err = await failure(t.flows.registerFlow({ flow: flowMessage({
      name: 'classify2', start: 'think',
      nodes: [{ id: 'think', agent: { model: 'nope', prompt: 'hi' } }, { id: 'out', end: {} }], edges: [{ from: 'think', to: 'out' }],
    }) }));
    expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_FLOW', fields: ['flow.nodes[0].agent.model'] });
  });
});
