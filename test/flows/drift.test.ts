import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema, PreconditionFailureSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { DriftRecovery } from '../../src/gen/waymark/v1/run_service_pb.js';
import { apiHarness, detail, failure, json, shapeOf } from '../server/api-harness.js';
import { flowMessage, refundFlow } from './flow-fixtures.js';

/*
 * A parked run never continues on a changed flow (docs/flows.md "Drift"): after an edit is
 * registered, ResumeRun refuses with FLOW_DRIFT and the choices restart and abandon; restart starts
 * the same input on the new version, abandon cancels; runs started after the edit use the new version.
 */
describe('flow drift', () => {
  it('resume refuses FLOW_DRIFT; restart runs the new version; abandon cancels; new runs use the new version', async () => {
    const t = apiHarness();
    const v1 = (await t.flows.registerFlow({ flow: flowMessage(refundFlow()) })).flow!;
    const input = json({ order: 'o-7', amount: 3 });
    const first = (await t.runs.startRun({ workflow: 'refund-flow', input, wait: true })).run!;
    const second = (await t.runs.startRun({ workflow: 'refund-flow', input, idempotencyKey: 'second', wait: true })).run!;
    expect([first.status, first.workflowVersion, first.workflowDigest]).toEqual([RunStatus.SUSPENDED, '1', v1.digest]);

    // The edit: the approval's title changes.
    const edited = refundFlow();
    (edited.nodes as { approval?: { title: string } }[])[0]!.approval!.title = 'Refund order {{ state.order }} (${{ state.amount }})?';
    const v2 = (await t.flows.registerFlow({ flow: flowMessage(edited) })).flow!;
    expect(v2.version).toBe('2');

    const err = await failure(t.runs.resumeRun({ runId: first.id }));
    expect(shapeOf(err)).toMatchObject({ code: Code.FailedPrecondition, reason: 'FLOW_DRIFT' });
    expect(detail(err, ErrorInfoSchema)?.metadata).toMatchObject({
      choices: 'restart,abandon', run_id: first.id, workflow: 'refund-flow', pinned_digest: v1.digest, current_digest: v2.digest,
    });
    expect(detail(err, PreconditionFailureSchema)?.violations[0]).toMatchObject({ type: 'FLOW_DRIFT', subject: `runs/${first.id}` });
    // Refused before anything was written: still parked on v1.
    expect((await t.runs.getRun({ runId: first.id })).run).toMatchObject({ status: RunStatus.SUSPENDED, workflowDigest: v1.digest });

    const restarted = await t.runs.resumeRun({ runId: first.id, driftRecovery: DriftRecovery.RESTART });
    expect(restarted.run?.status).toBe(RunStatus.CANCELLED);
    expect(restarted.restartedAs).toMatchObject({
      workflowName: 'refund-flow', workflowVersion: '2', workflowDigest: v2.digest, status: RunStatus.SUSPENDED, labels: { 'waymark.restarted_from': first.id },
    });
    const approval = (await t.runs.getRun({ runId: restarted.restartedAs!.id })).waitingOn[0]!;
    expect((await t.signals.getApproval({ id: approval.approvalId })).approval?.title).toBe('Refund order o-7 ($3)?');

    const abandoned = await t.runs.resumeRun({ runId: second.id, driftRecovery: DriftRecovery.ABANDON });
    expect(abandoned.run?.status).toBe(RunStatus.CANCELLED);
    expect(abandoned.restartedAs).toBeUndefined();

    const later = (await t.runs.startRun({ workflow: 'refund-flow', input, idempotencyKey: 'later', wait: true })).run!;
    expect([later.workflowVersion, later.workflowDigest]).toEqual(['2', v2.digest]);
  });

  it('a decision on a parked run whose flow changed fails it with FlowDriftError instead of continuing', async () => {
    const t = apiHarness();
    await t.flows.registerFlow({ flow: flowMessage(refundFlow()) });
    const started = await t.runs.startRun({ workflow: 'refund-flow', input: json({ order: 'o-8', amount: 4 }), wait: true });
    await t.flows.registerFlow({ flow: flowMessage(refundFlow({ description: 'v2' })) });
    const ended = t.executionEnded(started.run!.id);
    await t.signals.decideApproval({ id: started.waitingOn[0]!.approvalId, approve: true, by: 'bob' });
    expect((await ended).outcome).toBe('failed');
    const run = (await t.runs.getRun({ runId: started.run!.id })).run!;
    expect(run.error).toMatchObject({ name: 'FlowDriftError', reason: 'flow_drift' });
    const { entries } = await t.runs.getJournal({ runId: run.id });
    expect(entries.some((e) => e.kind === 'tool')).toBe(false);
  });
});
