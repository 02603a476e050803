import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ResourceInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { ApprovalDecision, ApprovalState, RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness, detail, failure, json, plain, shapeOf, snapshot, type ApiHarness } from './api-harness.js';

async function refundRun(t: ApiHarness, order: string, labels: Record<string, string> = {}) {
  const res = await t.runs.startRun({ workflow: 'refund', input: json({ order, amount: 10 }), wait: true, labels });
  return { run: res.run!, approvalId: res.waitingOn[0]!.approvalId };
}

describe('ListApprovals and GetApproval', () => {
  it('lists pending approvals oldest first by default, filtered by run, workflow and label, paged', async () => {
    const t = apiHarness();
    const a = await refundRun(t, 'o-1', { team: 'billing' });
    const b = await refundRun(t, 'o-2', { team: 'ops' });
    const c = await refundRun(t, 'o-3', { team: 'billing' });
    await t.signals.decideApproval({ id: b.approvalId, approve: true, by: 'ann' });
    const pending = await t.signals.listApprovals({});
    expect(pending.approvals.map((x) => x.id)).toEqual([a.approvalId, c.approvalId]);
    expect(pending.approvals[0]).toMatchObject({
      runId: a.run.id, workflowName: 'refund', title: 'Refund $10 for order o-1?', state: ApprovalState.PENDING,
      onTimeout: ApprovalDecision.DENY, labels: { team: 'billing' }, decidedBy: '',
    });
    expect(pending.approvals[0]!.deadline).toBeDefined();
    expect(plain(pending.approvals[0]!.payloadSchema)).toMatchObject({ type: 'object', required: ['approved'] });
    const list = async (req: Parameters<typeof t.signals.listApprovals>[0]) => (await t.signals.listApprovals(req)).approvals.map((x) => x.id);
    expect(await list({ runId: c.run.id })).toEqual([c.approvalId]);
    expect(await list({ labels: { team: 'ops' } })).toEqual([]);
    expect(await list({ labels: { team: 'ops' }, states: [ApprovalState.APPROVED] })).toEqual([b.approvalId]);
    expect(await list({ states: [ApprovalState.PENDING, ApprovalState.APPROVED] })).toEqual([a.approvalId, b.approvalId, c.approvalId]);
    expect(await list({ workflow: 'other' })).toEqual([]);
    expect(await list({ states: [ApprovalState.UNSPECIFIED] })).toEqual([]);
    const first = await t.signals.listApprovals({ pageSize: 1 });
    const second = await t.signals.listApprovals({ pageSize: 1, pageToken: first.nextPageToken });
    expect([...first.approvals, ...second.approvals].map((x) => x.id)).toEqual([a.approvalId, c.approvalId]);
    expect(second.nextPageToken).toBe('');
    const got = await t.signals.getApproval({ id: b.approvalId });
    expect(got.approval).toMatchObject({ state: ApprovalState.APPROVED, decidedBy: 'ann' });
    expect(plain(got.approval!.decisionPayload)).toEqual({ approved: true });
  });

  it('shows a cancelled run\'s undecided approval as CANCELLED', async () => {
    const t = apiHarness();
    const a = await refundRun(t, 'o-1');
    await t.runs.cancelRun({ runId: a.run.id });
    expect((await t.signals.getApproval({ id: a.approvalId })).approval?.state).toBe(ApprovalState.CANCELLED);
    expect((await t.signals.listApprovals({})).approvals).toEqual([]);
    expect((await t.signals.listApprovals({ states: [ApprovalState.CANCELLED] })).approvals.map((x) => x.id)).toEqual([a.approvalId]);
  });

  it('refuses unknown and malformed ids, bad filters and tokens', async () => {
    const t = apiHarness();
    const a = await refundRun(t, 'o-1');
    await refundRun(t, 'o-2');
    const missing = await failure(t.signals.getApproval({ id: `${a.run.id}:99` }));
    expect(shapeOf(missing)).toMatchObject({ code: Code.NotFound, reason: 'APPROVAL_NOT_FOUND' });
    expect(detail(missing, ResourceInfoSchema)?.resourceType).toBe('waymark.v1.Approval');
    expect(shapeOf(await failure(t.signals.getApproval({ id: `${a.run.id}:99`, namespace: 'elsewhere' })))).toMatchObject({ code: Code.NotFound });
    expect(shapeOf(await failure(t.signals.getApproval({ id: 'run-1:2' }))).fields).toEqual(['id']);
    expect(shapeOf(await failure(t.signals.listApprovals({ runId: 'x', states: [17 as ApprovalState], pageSize: -2 }))).fields)
      .toEqual(['run_id', 'states', 'page_size']);
    const token = (await t.signals.listApprovals({ pageSize: 1, states: [ApprovalState.PENDING, ApprovalState.DENIED] })).nextPageToken;
    expect(token).not.toBe('');
    expect(shapeOf(await failure(t.signals.listApprovals({ pageToken: token }))).fields).toEqual(['page_token']);
    expect(shapeOf(await failure(t.signals.listApprovals({ pageToken: Buffer.from('{"v":1,"l":"runs","f":"x","c":"y"}').toString('base64url') }))).fields)
      .toEqual(['page_token']);
  });
});

describe('DecideApproval', () => {
  it('approves; the receiving replica resumes the run and the refund executes exactly once', async () => {
    const t = apiHarness();
    const { run, approvalId } = await refundRun(t, 'o-9');
    const ended = t.executionEnded(run.id);
    const res = await t.signals.decideApproval({ id: approvalId, approve: true, by: 'ann@example.com', comment: 'ok', requestId: 'r-1' });
    expect(res).toMatchObject({ applied: true, reason: '', approval: { state: ApprovalState.APPROVED, decidedBy: 'ann@example.com', comment: 'ok' } });
    expect((await ended).run?.output).toMatchObject({ status: 'refunded' });
    const entries = (await t.runs.getJournal({ runId: run.id })).entries;
    expect(entries.filter((e) => e.kind === 'tool' && e.name === 'charge_back').map((e) => e.status)).toEqual([1, 2]); // intent, ok
    // The same request again: a duplicate; another decision: the winner, not applied.
    expect(await t.signals.decideApproval({ id: approvalId, approve: true, by: 'ann@example.com', requestId: 'r-1' }))
      .toMatchObject({ applied: false, reason: 'duplicate', approval: { state: ApprovalState.APPROVED } });
    const late = await t.signals.decideApproval({ id: approvalId, approve: false, by: 'bob', requestId: 'r-2' });
    expect(late).toMatchObject({ applied: false, reason: 'already_resolved', approval: { state: ApprovalState.APPROVED, decidedBy: 'ann@example.com' } });
    expect((await t.runs.getRun({ runId: run.id })).run?.status).toBe(RunStatus.SUCCEEDED);
  });

  it('denies: the run declines without refunding', async () => {
    const t = apiHarness();
    const { run, approvalId } = await refundRun(t, 'o-10');
    const ended = t.executionEnded(run.id);
    const res = await t.signals.decideApproval({ id: approvalId, approve: false, by: 'bob', comment: 'no receipt' });
    expect(res).toMatchObject({ applied: true, approval: { state: ApprovalState.DENIED, comment: 'no receipt' } });
    expect((await ended).run?.output).toEqual({ status: 'declined', by: 'bob', timedOut: false });
  });

  it('refuses without `by`, with a payload that is not an object or fails the schema, and an unknown approval, writing nothing', async () => {
    const t = apiHarness();
    const { approvalId, run } = await refundRun(t, 'o-11');
    const before = await snapshot(t.store);
    expect(shapeOf(await failure(t.signals.decideApproval({ id: approvalId, approve: true, payload: json([1]) }))).fields).toEqual(['by', 'payload']);
    expect(shapeOf(await failure(t.signals.decideApproval({ id: approvalId, approve: true, by: 'x', payload: json({ comment: 5 }) }))))
      .toEqual({ code: Code.InvalidArgument, reason: 'INVALID_RESOLUTION', fields: ['payload.comment'] });
    expect(shapeOf(await failure(t.signals.decideApproval({ id: `${run.id}:0`, approve: true, by: 'x' })))).toMatchObject({ code: Code.NotFound, reason: 'APPROVAL_NOT_FOUND' });
    expect(await snapshot(t.store)).toEqual(before);
  });
});
