import { create } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { QuotaFailureSchema, ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { WaitFor } from '../../src/gen/waymark/v1/run_service_pb.js';
import { apiHarness, detail, failure, json, plain, shapeOf, snapshot } from './api-harness.js';
import { sideEffects } from './fixtures/api-workflows.js';

describe('StartRun', () => {
  it('with wait executes here and answers with the output of a run that ended', async () => {
    const t = apiHarness();
    const res = await t.runs.startRun({ workflow: 'echo-flow', input: json({ value: 'hello' }), wait: true });
    expect(res.created).toBe(true);
    expect(res.run).toMatchObject({ workflowName: 'echo-flow', namespace: 'default', status: RunStatus.SUCCEEDED });
    expect(plain(res.run?.output)).toBe('hello');
    expect(res.waitingOn).toEqual([]);
    expect(res.run?.nextSeq).toBe(4n); // status RUNNING, the step's intent and outcome, status SUCCEEDED
  });

  it('with wait answers a run that parks with what it waits for (the approval id)', async () => {
    const t = apiHarness();
    const res = await t.runs.startRun({ workflow: 'refund', input: json({ order: 'o-1', amount: 12.5 }), wait: true });
    expect(res.run?.status).toBe(RunStatus.SUSPENDED);
    expect(res.waitingOn).toHaveLength(1);
    expect(res.waitingOn[0]).toMatchObject({ kind: 'approval', name: 'Refund $12.5 for order o-1?' });
    expect(res.waitingOn[0]!.approvalId).toBe(`${res.run!.id}:${res.waitingOn[0]!.seq}`);
    expect(res.waitingOn[0]!.deadline).toBeDefined();
  });

  it('wait_for over the wire: OUTSIDE_INPUT answers at the approval (wait_complete), no wait does not wait, an unknown value is refused', async () => {
    const t = apiHarness();
    const res = await t.runs.startRun({ workflow: 'refund', input: json({ order: 'o-2', amount: 3 }), waitFor: WaitFor.OUTSIDE_INPUT });
    expect(res.run?.status).toBe(RunStatus.SUSPENDED);
    expect(res.waitComplete).toBe(true);
    expect(res.waitingOn.map((w) => w.kind)).toEqual(['approval']);
    expect((await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true })).waitComplete).toBe(true);
    expect((await t.runs.startRun({ workflow: 'echo-flow', input: json({}) })).waitComplete).toBe(false);
    const err = await failure(t.runs.startRun({ workflow: 'echo-flow', input: json({}), waitFor: 9 as WaitFor }));
    expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields: ['wait_for'] });
  });

  it('without wait answers as soon as the run exists, PENDING for an executor', async () => {
    const t = apiHarness();
    const res = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), labels: { team: 'billing' } });
    expect(res.run).toMatchObject({ status: RunStatus.PENDING, nextSeq: 0n, labels: { team: 'billing' } });
    expect(await t.store.journalList({ runId: res.run!.id })).toEqual([]);
  });

  it('returns the first run for a repeated idempotency key (created = false), and with wait waits for it', async () => {
    const t = apiHarness();
    const first = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), idempotencyKey: 'order-7' });
    const again = await t.runs.startRun({ workflow: 'wait-signal', input: json({}), idempotencyKey: 'order-7' });
    expect(again).toMatchObject({ created: false, run: { id: first.run!.id } });
    // The first run is PENDING; a waiting repeat follows it until it parks (here: an executor pass).
    const waiting = t.runs.startRun({ workflow: 'wait-signal', input: json({}), idempotencyKey: 'order-7', wait: true });
    await t.engine.runExecutePending();
    const settled = await waiting;
    expect(settled).toMatchObject({ created: false, run: { id: first.run!.id, status: RunStatus.SUSPENDED } });
    expect(settled.waitingOn.map((w) => w.kind)).toEqual(['signal']);
    expect((await t.store.runList({ namespace: 'default', pageSize: 10 })).runs).toHaveLength(1);
  });

  it('dry_run runs read-only tools and skips mutating ones', async () => {
    const t = apiHarness();
    const before = sideEffects.count;
    const res = await t.runs.startRun({ workflow: 'dryable', input: json({}), wait: true, dryRun: true });
    expect(res.run).toMatchObject({ status: RunStatus.SUCCEEDED, dryRun: true });
    expect(plain(res.run!.output)).toEqual({ read: { key: 'k', found: true }, write: { __dryRun: true, tool: 'side_effect' } });
    expect(sideEffects.count).toBe(before);
    await t.runs.startRun({ workflow: 'dryable', input: json({}), wait: true });
    expect(sideEffects.count).toBe(before + 1);
  });

  describe('refuses, writing nothing', () => {
    it('an unknown workflow: NOT_FOUND, WORKFLOW_NOT_FOUND, a field violation on workflow', async () => {
      const t = apiHarness();
      const err = await failure(t.runs.startRun({ workflow: 'nope', input: json({}) }));
      expect(shapeOf(err)).toEqual({ code: Code.NotFound, reason: 'WORKFLOW_NOT_FOUND', fields: ['workflow'] });
      expect(await snapshot(t.store)).toEqual([]);
    });

    it('an input that fails the workflow schema: INVALID_ARGUMENT with input.* violations', async () => {
      const t = apiHarness();
      const err = await failure(t.runs.startRun({ workflow: 'refund', input: json({ order: '', amount: -3 }) }));
      expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_INPUT', fields: ['input.order', 'input.amount'] });
      expect(await snapshot(t.store)).toEqual([]);
    });

    it('malformed fields, all reported at once', async () => {
      const t = apiHarness();
      const err = await failure(t.runs.startRun({
        namespace: 'Not Valid', workflow: 'bad name!', idempotencyKey: 'x'.repeat(300), labels: { '-bad': 'v' }, budgetUsd: -1,
        input: create(ValueSchema, { kind: { case: 'numberValue', value: Number.NaN } }),
      }));
      expect(shapeOf(err)).toEqual({
        code: Code.InvalidArgument, reason: 'INVALID_REQUEST',
        fields: ['namespace', 'workflow', 'idempotency_key', 'labels[-bad]', 'budget_usd', 'input'],
      });
      expect(await snapshot(t.store)).toEqual([]);
    });

    it('an input over the payload limit: RESOURCE_EXHAUSTED naming the limit', async () => {
      const t = apiHarness({ limits: { payloadBytes: 1024 } });
      const err = await failure(t.runs.startRun({ workflow: 'echo-flow', input: json({ value: 'x'.repeat(2000) }) }));
      expect(shapeOf(err)).toMatchObject({ code: Code.ResourceExhausted, reason: 'PAYLOAD_TOO_LARGE', fields: ['input'] });
      expect(err.rawMessage).toContain('limit of 1024 bytes');
      expect(detail(err, ErrorInfoSchema)?.metadata).toMatchObject({ field: 'input', limit_bytes: '1024', limit: 'WAYMARK_MAX_PAYLOAD_BYTES' });
      expect(detail(err, QuotaFailureSchema)?.violations[0]?.subject).toBe('input');
      expect(await snapshot(t.store)).toEqual([]);
    });

    it('a NUL character in the input: INVALID_ARGUMENT naming where', async () => {
      const t = apiHarness();
      const err = await failure(t.runs.startRun({ workflow: 'echo-flow', input: json({ value: { note: 'a\u0000b' } }) }));
      expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'NUL_CHARACTER', fields: ['input.value.note'] });
      expect(await snapshot(t.store)).toEqual([]);
    });

    it('an idempotency key already used for another workflow: ALREADY_EXISTS', async () => {
      const t = apiHarness();
      const first = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), idempotencyKey: 'k' });
      const err = await failure(t.runs.startRun({ workflow: 'wait-signal', input: json({}), idempotencyKey: 'k' }));
      expect(shapeOf(err)).toMatchObject({ code: Code.AlreadyExists, reason: 'IDEMPOTENCY_KEY_REUSED' });
      expect(detail(err, ErrorInfoSchema)?.metadata.existing_run_id).toBe(first.run!.id);
      expect((await t.store.runList({ namespace: 'default', pageSize: 10 })).runs).toHaveLength(1);
    });
  });
});
