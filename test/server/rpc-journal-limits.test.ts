import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Metrics } from '../../src/cli/metrics.js';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { Registry } from '../../src/engine/registry.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { apiHarness } from './api-harness.js';

/*
 * Bounded journals as the API shows them (docs/journal.md "Bounded journals"): GetRun and ListRuns
 * report the journal's bytes and `journal_near_limit` from 80 % of either limit, the metric
 * waymark_journal_near_limit_total counts executions that ended so, and a run past the limit
 * fails with JournalFullError.
 */

const steps = defineWorkflow({ name: 'steps', input: z.object({ n: z.number(), size: z.number() }) }, async (ctx, { n, size }) => {
  for (let i = 0; i < n; i++) await ctx.step(`s${i}`, () => 'x'.repeat(size));
  return { done: n };
});

async function startAndGet(h: ReturnType<typeof apiHarness>, n: number, size: number) {
  const { run } = await h.runs.startRun({ workflow: 'steps', input: { kind: { case: 'structValue', value: { fields: {
    n: { kind: { case: 'numberValue', value: n } }, size: { kind: { case: 'numberValue', value: size } },
  } } } }, wait: true });
  return (await h.runs.getRun({ runId: run!.id })).run!;
}

describe('journal limits on GetRun, ListRuns and the metric', () => {
  it('warns at 80 % of the entry limit and fails the run at it', async () => {
    const h = apiHarness({ limits: { journalEntries: 10 }, registry: new Registry().register(steps) });
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.watchEngine(h.engine);
    try {
      // RUNNING, 3 steps (an entry each) and SUCCEEDED: 5 of 10.
      const small = await startAndGet(h, 3, 1);
      expect(small.status).toBe(RunStatus.SUCCEEDED);
      expect([small.nextSeq, small.journalNearLimit]).toEqual([5n, false]);
      // 8 of 10: near the limit, and the execution is counted.
      const near = await startAndGet(h, 6, 1);
      expect(near.status).toBe(RunStatus.SUCCEEDED);
      expect([near.nextSeq, near.journalNearLimit]).toEqual([8n, true]);
      expect((await h.runs.listRuns({})).runs.find((r) => r.id === near.id)?.journalNearLimit).toBe(true);
      expect(await metrics.registry.getSingleMetricAsString('waymark_journal_near_limit_total')).toMatch(/^waymark_journal_near_limit_total\{workflow="steps"\} 1$/m);
      // Past it: the run fails with the named error.
      const full = await startAndGet(h, 20, 1);
      expect(full.status).toBe(RunStatus.FAILED);
      expect(full.error).toMatchObject({ name: 'JournalFullError' });
    } finally {
      metrics.stop();
    }
  });

  it('reports the bytes of the journal and warns at 80 % of the byte limit', async () => {
    const h = apiHarness({ limits: { journalBytes: 10_000 }, registry: new Registry().register(steps) });
    const low = await startAndGet(h, 2, 998); // two results of 1000 bytes of JSON
    expect([low.journalBytes, low.journalNearLimit]).toEqual([2000n, false]);
    const high = await startAndGet(h, 8, 998);
    expect([high.journalBytes, high.journalNearLimit]).toEqual([8000n, true]);
    const over = await startAndGet(h, 11, 998);
    expect(over.status).toBe(RunStatus.FAILED);
    expect(over.error).toMatchObject({ name: 'JournalFullError', message: expect.stringMatching(/10000 bytes/) });
    expect(over.journalBytes).toBe(10_000n);
  });
});
