import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { ErrorInfoSchema, PreconditionFailureSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { EntryStatus, ResumeOutcome, RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { DriftRecovery } from '../../src/gen/waymark/v1/run_service_pb.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { apiHarness, detail, failure, FIXTURE_ITEMS, json, plain, shapeOf, snapshot } from './api-harness.js';
import { sideEffects } from './fixtures/api-workflows.js';

describe('ResumeRun', () => {
  it('with dry_run previews a resume with zero live calls and writes nothing', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'dryable', input: json({}), wait: true });
    const before = await snapshot(t.store);
    const count = sideEffects.count;
    const { journal } = (await snapshot(t.store) as { journal: { seq: number; kind: string; status: string }[] }[])[0]!;
    const intent = journal.find((e) => e.kind === 'tool' && e.status === 'running')!;
    const res = await t.runs.resumeRun({ runId: run!.id, dryRun: true, invalidate: [BigInt(intent.seq)] });
    expect(res.run?.status).toBe(RunStatus.SUCCEEDED);
    expect(res.preview).toMatchObject({ hits: 1, misses: 0, reruns: 1, skipped: 0, orphaned: 0, invalidResolutions: 0 });
    expect(res.preview!.items.map((i) => [ResumeOutcome[i.outcome], i.kind, i.name])).toEqual([
      ['HIT', 'tool', 'lookup'], ['RERUN', 'tool', 'side_effect'],
    ]);
    expect(res.preview!.items[1]!.detail).toContain('cancelled');
    expect(await snapshot(t.store)).toEqual(before);
    expect(sideEffects.count).toBe(count);
    const plainPreview = await t.runs.resumeRun({ runId: run!.id, dryRun: true });
    expect(plainPreview.preview).toMatchObject({ hits: 2, misses: 0, reruns: 0 });
  });

  it('re-executes a failed run from its journal (in the background, on this replica)', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'boom', input: json({}), wait: true });
    expect(run?.status).toBe(RunStatus.FAILED);
    expect(run?.error).toMatchObject({ name: 'Error', message: 'kaput' });
    const ended = t.executionEnded(run!.id);
    const res = await t.runs.resumeRun({ runId: run!.id });
    expect(res.run?.status).toBe(RunStatus.PENDING);
    expect((await ended).outcome).toBe('failed'); // the step fails again: it ran again
    const steps = (await t.runs.getJournal({ runId: run!.id })).entries.filter((e) => e.kind === 'step' && e.status === 3);
    expect(steps).toHaveLength(2);
  });

  it('refuses a bad invalidate target, a run executing elsewhere, and malformed fields, writing nothing', async () => {
    const t = apiHarness();
    const { run } = await t.runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
    const before = await snapshot(t.store);
    expect(shapeOf(await failure(t.runs.resumeRun({ runId: run!.id, invalidate: [0n] }))))
      .toEqual({ code: Code.InvalidArgument, reason: 'INVALID_INVALIDATE_TARGET', fields: ['invalidate'] });
    expect(shapeOf(await failure(t.runs.resumeRun({ runId: run!.id, invalidate: [-1n], driftRecovery: 9 as DriftRecovery }))).fields)
      .toEqual(['invalidate[0]', 'drift_recovery']);
    expect(await snapshot(t.store)).toEqual(before);
    // Another worker holds the lease: WRONG_STATE.
    const other = await t.store.runCreate({
      namespace: 'default', workflowName: 'echo-flow', workflowVersion: '1', workflowDigest: 'd', input: {}, leaseFor: { holder: 'replica-b', ttlMs: 60_000 },
    });
    const err = await failure(t.runs.resumeRun({ runId: other.run.id }));
    expect(shapeOf(err)).toMatchObject({ code: Code.FailedPrecondition, reason: 'WRONG_STATE' });
    expect(detail(err, PreconditionFailureSchema)?.violations[0]).toMatchObject({ type: 'WRONG_STATE', subject: `runs/${other.run.id}` });
  });

  it('refuses a run whose strict workflow changed with FLOW_DRIFT and its choices; drift_recovery RESTART starts it again', async () => {
    const store = new MemoryStore();
    const before = apiHarness({ store });
    const { run } = await before.runs.startRun({ workflow: 'strict-flow', input: json({}), wait: true });
    // A deploy changes the strict workflow's body.
    const changed = defineWorkflow({ name: 'strict-flow', drift: 'strict', input: z.object({}) }, async (ctx) => ctx.signal('go-v2'));
    const after = apiHarness({ store, items: [...FIXTURE_ITEMS.filter((i) => i.name !== 'strict-flow'), changed] });
    const err = await failure(after.runs.resumeRun({ runId: run!.id }));
    expect(shapeOf(err)).toMatchObject({ code: Code.FailedPrecondition, reason: 'FLOW_DRIFT' });
    expect(detail(err, ErrorInfoSchema)?.metadata).toMatchObject({ choices: 'restart,abandon', run_id: run!.id, workflow: 'strict-flow' });
    const res = await after.runs.resumeRun({ runId: run!.id, driftRecovery: DriftRecovery.RESTART });
    expect(res.run?.status).toBe(RunStatus.CANCELLED);
    expect(res.restartedAs).toMatchObject({ workflowName: 'strict-flow', status: RunStatus.SUSPENDED, labels: { 'waymark.restarted_from': run!.id } });
    expect((await after.runs.getRun({ runId: res.restartedAs!.id })).waitingOn[0]?.name).toBe('go-v2');
  });
});

describe('CancelRun', () => {
  it('journals a cancelled resolution for each open suspension of the run and of its children', async () => {
    const t = apiHarness();
    const { run: parent } = await t.runs.startRun({ workflow: 'parent-flow', input: json({}), wait: true });
    const [child] = (await t.runs.listRuns({ parentRunId: parent!.id })).runs;
    await t.engine.runExecute({ runId: child!.id, namespace: 'default' }); // parks on its signal
    expect((await t.runs.getRun({ runId: child!.id })).waitingOn.map((w) => w.kind)).toEqual(['signal']);

    await t.runs.cancelRun({ runId: parent!.id, reason: 'customer withdrew' });
    for (const runId of [parent!.id, child!.id]) {
      const { entries } = await t.runs.getJournal({ runId });
      const suspended = entries.filter((e) => e.status === EntryStatus.SUSPENDED);
      const closed = entries.filter((e) => e.status === EntryStatus.CANCELLED);
      expect(suspended).toHaveLength(1);
      expect(closed.map((e) => e.refSeq)).toEqual([suspended[0]!.seq]);
      expect(plain(closed[0]!.payload)).toMatchObject({ reason: 'run_cancelled', message: 'customer withdrew' });
      // The cancellation entry comes before the terminal status change.
      expect(entries[entries.length - 1]!.kind).toBe('status');
      expect((await t.runs.getRun({ runId })).run?.status).toBe(RunStatus.CANCELLED);
    }
  });

  it('cancels a run and its unfinished children; cancelling a finished run returns it unchanged', async () => {
    const t = apiHarness();
    const { run: parent } = await t.runs.startRun({ workflow: 'parent-flow', input: json({}), wait: true });
    const [child] = (await t.runs.listRuns({ parentRunId: parent!.id })).runs;
    expect(child?.status).toBe(RunStatus.PENDING);
    const res = await t.runs.cancelRun({ runId: parent!.id, reason: 'customer withdrew' });
    expect(res.run).toMatchObject({ status: RunStatus.CANCELLED, error: { reason: 'cancelled', message: 'customer withdrew' } });
    expect((await t.runs.getRun({ runId: child!.id })).run?.status).toBe(RunStatus.CANCELLED);
    const again = await t.runs.cancelRun({ runId: parent!.id, reason: 'twice' });
    expect(again.run?.error?.message).toBe('customer withdrew');
    const { run: done } = await t.runs.startRun({ workflow: 'echo-flow', input: json({ value: 5 }), wait: true });
    const unchanged = await t.runs.cancelRun({ runId: done!.id });
    expect(unchanged.run?.status).toBe(RunStatus.SUCCEEDED);
    expect(plain(unchanged.run?.output)).toBe(5);
  });

  it('refuses an unknown run and an oversized reason', async () => {
    const t = apiHarness();
    expect(shapeOf(await failure(t.runs.cancelRun({ runId: '018f0000-0000-7000-8000-000000000000' })))).toMatchObject({ code: Code.NotFound, reason: 'RUN_NOT_FOUND' });
    expect(shapeOf(await failure(t.runs.cancelRun({ runId: '018f0000-0000-7000-8000-000000000000', reason: 'r'.repeat(2000) }))).fields).toEqual(['reason']);
  });
});
