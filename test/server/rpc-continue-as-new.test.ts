import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { Registry } from '../../src/engine/registry.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness } from './api-harness.js';

/* GetRun shows a continue-as-new hand-over both ways: continued_as_run_id and continued_from_run_id. */

const twice = defineWorkflow({ name: 'twice', input: z.object({ round: z.number() }) }, async (ctx, { round }) => {
  await ctx.step(`round-${round}`, () => round);
  if (round === 1) return ctx.continueAsNew({ round: 2 });
  return { round };
});

describe('GetRun of a run that continued as new', () => {
  it('links the run and its successor both ways', async () => {
    const h = apiHarness({ registry: new Registry().register(twice) });
    const { run } = await h.runs.startRun({ workflow: 'twice', input: { kind: { case: 'structValue', value: { fields: { round: { kind: { case: 'numberValue', value: 1 } } } } } }, wait: true });
    const first = (await h.runs.getRun({ runId: run!.id })).run!;
    expect(first.status).toBe(RunStatus.SUCCEEDED);
    expect(first.continuedAsRunId).not.toBe('');
    expect(first.continuedFromRunId).toBe('');
    const next = (await h.runs.getRun({ runId: first.continuedAsRunId })).run!;
    expect([next.status, next.continuedFromRunId, next.continuedAsRunId, next.workflowName]).toEqual([RunStatus.PENDING, first.id, '', 'twice']);
  });
});
