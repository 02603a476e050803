import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema, ResourceInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { DriftPolicy, EntryStatus, RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness, detail, failure, json, plain, shapeOf } from './api-harness.js';

const UNKNOWN_RUN = '018f0000-0000-7000-8000-000000000000';

describe('GetRun', () => {
  it('returns the run and, while it is suspended, what it waits for', async () => {
    const t = apiHarness();
    const started = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true, labels: { team: 'ops' } });
    const res = await t.runs.getRun({ runId: started.run!.id });
    expect(res.run).toMatchObject({ id: started.run!.id, status: RunStatus.SUSPENDED, labels: { team: 'ops' }, workflowVersion: '1' });
    expect(res.run!.workflowDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(res.waitingOn.map((w) => [w.kind, w.name])).toEqual([['signal', 'go']]);
    expect(plain(res.run!.input)).toEqual({});
  });

  it('is fail-closed: an unknown id, or a run of another namespace, is NOT_FOUND with RUN_NOT_FOUND', async () => {
    const t = apiHarness();
    const started = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), namespace: 'team-a' });
    for (const req of [{ runId: UNKNOWN_RUN }, { runId: started.run!.id, namespace: 'team-b' }, { runId: started.run!.id }]) {
      const err = await failure(t.runs.getRun(req));
      expect(shapeOf(err)).toEqual({ code: Code.NotFound, reason: 'RUN_NOT_FOUND', fields: [] });
      expect(detail(err, ResourceInfoSchema)).toMatchObject({ resourceType: 'waymark.v1.Run', resourceName: req.runId });
    }
    expect((await t.runs.getRun({ runId: started.run!.id, namespace: 'team-a' })).run?.id).toBe(started.run!.id);
  });

  it('refuses a missing or malformed id with a field violation', async () => {
    const t = apiHarness();
    expect(shapeOf(await failure(t.runs.getRun({})))).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields: ['run_id'] });
    const err = await failure(t.runs.getRun({ runId: 'run-1; DROP TABLE runs' }));
    expect(shapeOf(err).fields).toEqual(['run_id']);
  });
});

describe('ListRuns', () => {
  async function seeded() {
    const t = apiHarness();
    const a = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true, labels: { team: 'a' } });
    const b = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true, labels: { team: 'b' } });
    const c = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), labels: { team: 'b' } });
    const parent = await t.runs.startRun({ workflow: 'parent-flow', input: json({}), wait: true });
    return { t, ids: { a: a.run!.id, b: b.run!.id, c: c.run!.id, parent: parent.run!.id } };
  }

  it('filters by status, workflow, labels and parent', async () => {
    const { t, ids } = await seeded();
    const list = async (req: Parameters<typeof t.runs.listRuns>[0]) => (await t.runs.listRuns(req)).runs.map((r) => r.id).sort();
    expect(await list({})).toHaveLength(5); // the parent's child too
    expect(await list({ statuses: [RunStatus.SUCCEEDED] })).toEqual([ids.a]);
    expect(await list({ statuses: [RunStatus.PENDING, RunStatus.SUCCEEDED], workflow: 'echo-flow' })).toEqual([ids.a, ids.c].sort());
    expect(await list({ workflow: 'echo-flow' })).toEqual([ids.a, ids.c].sort());
    expect(await list({ labels: { team: 'b' } })).toEqual([ids.b, ids.c].sort());
    const children = await t.runs.listRuns({ parentRunId: ids.parent });
    expect(children.runs.map((r) => [r.workflowName, r.parentRunId])).toEqual([['wait-signal', ids.parent]]);
    // UNSPECIFIED matches nothing, as the proto says.
    expect(await list({ statuses: [RunStatus.UNSPECIFIED] })).toEqual([]);
  });

  it('pages newest first with opaque tokens that visit every run once', async () => {
    const { t } = await seeded();
    const seen: string[] = [];
    let pageToken = '';
    let pages = 0;
    do {
      const page = await t.runs.listRuns({ pageSize: 2, pageToken });
      seen.push(...page.runs.map((r) => r.id));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken);
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(5);
    const all = (await t.runs.listRuns({})).runs.map((r) => r.id);
    expect(seen).toEqual(all);
  });

  it('refuses a bad token, a token for other filters, a negative page size and unknown statuses', async () => {
    const { t } = await seeded();
    const { nextPageToken } = await t.runs.listRuns({ pageSize: 1, workflow: 'echo-flow' });
    expect(nextPageToken).not.toBe('');
    const cases: [Parameters<typeof t.runs.listRuns>[0], string[]][] = [
      [{ pageToken: 'not-a-token' }, ['page_token']],
      [{ pageToken: nextPageToken }, ['page_token']], // issued for workflow=echo-flow
      [{ pageToken: Buffer.from('{"v":1,"l":"runs","f":"x","c":"y"}').toString('base64url') }, ['page_token']],
      [{ pageSize: -1 }, ['page_size']],
      [{ statuses: [42 as RunStatus] }, ['statuses']],
      [{ parentRunId: 'nope', workflow: 'bad name' }, ['workflow', 'parent_run_id']],
    ];
    for (const [req, fields] of cases) {
      expect(shapeOf(await failure(t.runs.listRuns(req)))).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields });
    }
    expect((await t.runs.listRuns({ pageSize: 1, workflow: 'echo-flow', pageToken: nextPageToken })).runs).toHaveLength(1);
    // A page size over the maximum is clamped, not refused.
    expect((await t.runs.listRuns({ pageSize: 1_000_000 })).runs).toHaveLength(5);
  });
});

describe('GetJournal', () => {
  it('pages a run\'s entries in seq order from after_seq', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'echo-flow', input: json({ value: 1 }), wait: true });
    const all = await t.runs.getJournal({ runId: run!.id });
    expect(all.entries.map((e) => [e.seq, e.kind, e.status])).toEqual([
      [0n, 'status', EntryStatus.INFO], [1n, 'step', EntryStatus.RUNNING], [2n, 'step', EntryStatus.OK], [3n, 'status', EntryStatus.INFO],
    ]);
    expect(all.entries[2]).toMatchObject({ name: 'noted', refSeq: 1n, runId: run!.id });
    expect(all.entries[2]!.idempotencyKey).toMatch(new RegExp(`^${run!.id}:`));
    expect(plain(all.entries[2]!.payload)).toBe('ok');
    expect(all.nextPageToken).toBe('');

    const first = await t.runs.getJournal({ runId: run!.id, pageSize: 3 });
    expect(first.entries.map((e) => e.seq)).toEqual([0n, 1n, 2n]);
    const second = await t.runs.getJournal({ runId: run!.id, pageSize: 3, pageToken: first.nextPageToken });
    expect(second.entries.map((e) => e.seq)).toEqual([3n]);
    expect(second.nextPageToken).toBe('');
    expect((await t.runs.getJournal({ runId: run!.id, afterSeq: 1n })).entries.map((e) => e.seq)).toEqual([2n, 3n]);
  });

  it('refuses an unknown run, a bad after_seq and a token of another run', async () => {
    const t = apiHarness();
    const a = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
    const b = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
    const token = (await t.runs.getJournal({ runId: a.run!.id, pageSize: 1 })).nextPageToken;
    expect(shapeOf(await failure(t.runs.getJournal({ runId: UNKNOWN_RUN })))).toMatchObject({ code: Code.NotFound, reason: 'RUN_NOT_FOUND' });
    expect(shapeOf(await failure(t.runs.getJournal({ runId: a.run!.id, afterSeq: -5n }))).fields).toEqual(['after_seq']);
    expect(shapeOf(await failure(t.runs.getJournal({ runId: b.run!.id, pageToken: token }))).fields).toEqual(['page_token']);
  });
});

describe('ListWorkflows', () => {
  it('lists the registered workflows with their input schemas and drift policies', async () => {
    const t = apiHarness();
    const { workflows } = await t.runs.listWorkflows({});
    const refund = workflows.find((w) => w.name === 'refund')!;
    expect(refund).toMatchObject({ version: '1', driftPolicy: DriftPolicy.WARN });
    expect(refund.description).toContain('approves');
    expect(plain(refund.inputSchema)).toMatchObject({ type: 'object', required: ['order', 'amount'] });
    expect(workflows.find((w) => w.name === 'strict-flow')?.driftPolicy).toBe(DriftPolicy.STRICT);
    expect(workflows.map((w) => w.name)).toEqual([...workflows.map((w) => w.name)].sort());
    const err = await failure(t.runs.listWorkflows({ namespace: 'UPPER' }));
    expect(detail(err, ErrorInfoSchema)?.reason).toBe('INVALID_REQUEST');
  });
});
