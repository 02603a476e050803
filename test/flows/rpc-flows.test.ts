import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { DriftPolicy } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness, failure, json, plain, shapeOf } from '../server/api-harness.js';
import { flowMessage, refundFlow } from './flow-fixtures.js';

describe('FlowService', () => {
  it('registers a flow as version 1; the same content again is a no-op; an edit is version 2', async () => {
    const t = apiHarness();
    const first = await t.flows.registerFlow({ flow: flowMessage(refundFlow()) });
    expect(first.created).toBe(true);
    expect(first.flow).toMatchObject({ namespace: 'default', version: '1' });
    expect(first.flow!.digest).toMatch(/^[0-9a-f]{64}$/);
    const again = await t.flows.registerFlow({ flow: flowMessage(refundFlow()) });
    expect(again).toMatchObject({ created: false, flow: { version: '1', digest: first.flow!.digest } });
    const edited = await t.flows.registerFlow({ flow: flowMessage(refundFlow({ description: 'edited' })) });
    expect(edited).toMatchObject({ created: true, flow: { version: '2' } });
    expect(edited.flow!.digest).not.toBe(first.flow!.digest);

    expect((await t.flows.getFlow({ name: 'refund-flow' })).flow).toMatchObject({ version: '2', flow: { description: 'edited' } });
    expect((await t.flows.getFlow({ name: 'refund-flow', version: '1' })).flow).toMatchObject({ version: '1', digest: first.flow!.digest });
    expect((await t.flows.listFlows({})).flows.map((f) => [f.flow!.name, f.version])).toEqual([['refund-flow', '2']]);
    expect(shapeOf(await failure(t.flows.getFlow({ name: 'refund-flow', version: '3' })))).toMatchObject({ code: Code.NotFound, reason: 'FLOW_NOT_FOUND' });
    expect(shapeOf(await failure(t.flows.getFlow({ name: 'refund-flow', namespace: 'other' })))).toMatchObject({ code: Code.NotFound, reason: 'FLOW_NOT_FOUND' });

    // ListWorkflows sees it beside the code workflows, strict, with its state schema as input schema.
    const listed = (await t.runs.listWorkflows({})).workflows.find((w) => w.name === 'refund-flow');
    expect(listed).toMatchObject({ version: '2', digest: edited.flow!.digest, driftPolicy: DriftPolicy.STRICT });
    expect(plain(listed!.inputSchema)).toMatchObject({ required: ['order', 'amount'] });
  });

  it('refuses a name a code workflow has', async () => {
    const t = apiHarness();
    const err = await failure(t.flows.registerFlow({ flow: flowMessage(refundFlow({ name: 'refund' })) }));
    expect(shapeOf(err)).toEqual({ code: Code.AlreadyExists, reason: 'FLOW_NAME_TAKEN', fields: ['flow.name'] });
    expect(await t.store.flowList({ namespace: 'default' })).toEqual([]);
  });

  it('runs a flow through an approval: StartRun parks it, the decision takes the approved edge, the tool runs once', async () => {
    const t = apiHarness();
    await t.flows.registerFlow({ flow: flowMessage(refundFlow()) });
    const started = await t.runs.startRun({ workflow: 'refund-flow', input: json({ order: 'o-1', amount: 12.5 }), wait: true });
    expect(started.run).toMatchObject({ status: RunStatus.SUSPENDED, workflowVersion: '1' });
    const approvalId = started.waitingOn[0]!.approvalId;
    expect((await t.signals.getApproval({ id: approvalId })).approval?.title).toBe('Refund $12.5 for order o-1?');
    const ended = t.executionEnded(started.run!.id);
    await t.signals.decideApproval({ id: approvalId, approve: true, by: 'alice' });
    expect((await ended).outcome).toBe('succeeded');
    const run = (await t.runs.getRun({ runId: started.run!.id })).run!;
    expect(run.status).toBe(RunStatus.SUCCEEDED);
    expect(plain(run.output)).toMatchObject({ status: 'refunded', refundId: expect.stringMatching(/^rf_/) });

    const entries = (await t.runs.getJournal({ runId: run.id })).entries;
    const emitted = entries.filter((e) => e.kind === 'emit').map((e) => plain(e.payload) as Record<string, unknown>);
    expect(emitted.filter((e) => e.type === 'flow.node').map((e) => [e.node, e.from])).toEqual([
      ['approve', null], ['approved', 'approve'], ['charge', 'approved'], ['refunded', 'charge'],
    ]);
    expect(emitted.find((e) => e.type === 'flow.branch')).toEqual({
      type: 'flow.branch', node: 'approved', taken: 'charge',
      edges: [
        { to: 'charge', condition: 'state.decision.approved', result: true, taken: true },
        { to: 'declined', condition: null, result: null, taken: false },
      ],
    });
    expect(entries.filter((e) => e.kind === 'tool' && e.name === 'charge_back').length).toBeGreaterThan(0);
  });

  it('refuses a start whose input breaks the state schema, writing nothing', async () => {
    const t = apiHarness();
    await t.flows.registerFlow({ flow: flowMessage(refundFlow()) });
    const err = await failure(t.runs.startRun({ workflow: 'refund-flow', input: json({ order: '', amount: 1 }), wait: true }));
    expect(shapeOf(err)).toMatchObject({ code: Code.InvalidArgument, reason: 'INVALID_INPUT' });
    expect((await t.store.runList({ namespace: 'default', pageSize: 10 })).runs).toEqual([]);
  });
});
