import { describe, expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { JournalStore } from '../../src/store/store.js';
import { apiHarness } from './api-harness.js';

/*
 * Run.spent_usd is folded from the journal's cost column: GetRun reports what budgets count (the
 * run's own model calls plus its children's, recursively); ListRuns stays one summing read per page
 * and reports each run's own entries.
 */
const NS = 'default';

/** A run (child of `parentRunId` when given) whose journal holds model entries costing `costs`. */
async function runWithCosts(store: JournalStore, costs: number[], parentRunId: string | null = null): Promise<string> {
  const { run, lease } = await store.runCreate({
    namespace: NS, workflowName: 'echo-flow', workflowVersion: '1', workflowDigest: 'd'.repeat(64), input: {},
    parentRunId, leaseFor: { holder: 'writer', ttlMs: 30_000 },
  });
  await store.journalAppend({
    lease: lease!,
    entries: costs.map((costUsd, i) => newEntry({
      kind: 'model', name: 'scripted:echo', status: 'ok', contentKey: `k${i}`, payload: {}, costUsd, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
    })),
  });
  return run.id;
}

describe('Run.spent_usd', () => {
  it('GetRun folds the run and its children; ListRuns sums each run\'s own entries', async () => {
    const t = apiHarness();
    const parent = await runWithCosts(t.store, [0.25, 0.5]);
    const child = await runWithCosts(t.store, [0.125], parent);
    const idle = await runWithCosts(t.store, []);

    expect((await t.runs.getRun({ runId: parent })).run!.spentUsd).toBe(0.875);
    expect((await t.runs.getRun({ runId: child })).run!.spentUsd).toBe(0.125);
    expect((await t.runs.getRun({ runId: idle })).run!.spentUsd).toBe(0);

    const listed = Object.fromEntries((await t.runs.listRuns({})).runs.map((r) => [r.id, r.spentUsd]));
    expect(listed).toEqual({ [parent]: 0.75, [child]: 0.125, [idle]: 0 });
  });
});
