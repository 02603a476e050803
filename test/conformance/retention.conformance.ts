import { expect, it } from 'vitest';
import { RunNotFoundError, SweeperLeaseLostError } from '../../src/journal/errors.js';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { JournalStore } from '../../src/store/store.js';
import { runParams, startRun, step, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * Retention's store side (store/retention-params.ts, docs/operations.md "Retention"): runPurge
 * deletes whole finished run trees past a horizon, with every row keyed by their runs, never a
 * parked, pending or running run, and keeps their cost as a daily roll-up. `advance` ages the runs
 * (the Postgres harness backdates updated_at), so "ended 31 days ago" is a state, not a wait.
 */

const DAY = 86_400_000;

/** A run that ends SUCCEEDED with `steps` journaled steps (one of them a priced model call when `model`). */
async function finishedRun(store: JournalStore, overrides: Parameters<typeof runParams>[0] = {}, model = false) {
  const { run, lease } = await startRun(store, overrides);
  await store.journalAppend({ lease, entries: [step('a'), step('b')] });
  if (model) {
    await store.journalAppend({ lease, entries: [newEntry({
      kind: 'model', name: 'gpt', status: 'ok', contentKey: 'ck:model', payload: { text: 'hi' },
      usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120 }, costUsd: 0.25,
    })] });
  }
  await store.runStatusSet({ lease, status: 'SUCCEEDED', output: { ok: true } });
  return run;
}

async function exists(store: JournalStore, runId: string, namespace = 'default'): Promise<boolean> {
  try {
    await store.runGet({ runId, namespace });
    return true;
  } catch (err) {
    if (err instanceof RunNotFoundError) return false;
    throw err;
  }
}

export function retentionSection({ h }: SuiteContext): void {
  it('purges exactly the finished runs past the horizon, never parked, pending, running or recent ones', async () => {
    const { store, advance } = h();
    const old = [await finishedRun(store)];
    await advance(1_000); // distinct ends: the order is theirs, not their ids'
    old.push(await finishedRun(store, { workflowName: 'other' }));
    const { run: parked, lease: parkedLease } = await startRun(store);
    await store.journalAppend({ lease: parkedLease, entries: [suspension('approve')] });
    await store.runStatusSet({ lease: parkedLease, status: 'SUSPENDED' });
    const { run: running } = await startRun(store);
    const { run: pending } = await store.runCreate(runParams());
    await advance(31 * DAY);
    const recent = await finishedRun(store);

    const dry = await store.runPurge({ olderThanMs: 30 * DAY, limit: 100, dryRun: true });
    expect(new Set(dry.runIds)).toEqual(new Set(old.map((r) => r.id)));
    expect(dry.entries).toBe(6); // two steps and the status entry, each
    for (const r of old) expect(await exists(store, r.id)).toBe(true);

    const purged = await store.runPurge({ olderThanMs: 30 * DAY, limit: 100 });
    expect(purged.roots).toEqual(old.map((r) => r.id)); // oldest end first
    expect(new Set(purged.runIds)).toEqual(new Set(old.map((r) => r.id)));
    expect(purged.entries).toBe(6);
    for (const r of old) expect(await exists(store, r.id)).toBe(false);
    for (const r of [parked, running, pending, recent]) expect(await exists(store, r.id)).toBe(true);
    expect((await store.journalList({ runId: parked.id, namespace: 'default' })).length).toBe(2);
    expect((await store.runPurge({ olderThanMs: 30 * DAY, limit: 100 })).runIds).toEqual([]);
  });

  it('works in batches of `limit` root runs, and by namespace or all namespaces but some', async () => {
    const { store, advance } = h();
    const a = [];
    for (let i = 0; i < 3; i++) {
      a.push(await finishedRun(store));
      await advance(1_000); // distinct ends: the order is theirs, not their ids'
    }
    const b = await finishedRun(store, { namespace: 'other' });
    await advance(2 * DAY);
    expect((await store.runPurge({ olderThanMs: DAY, limit: 2, exceptNamespaces: ['default'] })).runIds).toEqual([b.id]);
    expect((await store.runPurge({ olderThanMs: DAY, limit: 2, namespace: 'default' })).roots).toEqual([a[0]!.id, a[1]!.id]);
    expect((await store.runPurge({ olderThanMs: DAY, limit: 2, namespace: 'default' })).roots).toEqual([a[2]!.id]);
    expect(await exists(store, a[2]!.id)).toBe(false);
  });

  it('filters by the root run\'s status and workflow, and reports when the first and last root ended', async () => {
    const { store, advance } = h();
    const ok = await finishedRun(store);
    await advance(1_000);
    const other = await finishedRun(store, { workflowName: 'other' });
    await advance(1_000);
    const { run: failed, lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'E', message: 'm' } });
    await advance(2 * DAY);
    const ends = async (id: string) => (await store.runGet({ runId: id, namespace: 'default' })).updatedAt.getTime();
    const all = await store.runPurge({ olderThanMs: DAY, limit: 10, dryRun: true });
    expect(all.roots).toEqual([ok.id, other.id, failed.id]);
    expect([all.oldestEnd?.getTime(), all.newestEnd?.getTime()]).toEqual([await ends(ok.id), await ends(failed.id)]);
    expect((await store.runPurge({ olderThanMs: DAY, limit: 10, dryRun: true, statuses: ['RUNNING'] })).roots).toEqual([]);
    const byStatus = await store.runPurge({ olderThanMs: DAY, limit: 10, statuses: ['FAILED'] });
    expect(byStatus.roots).toEqual([failed.id]);
    expect([byStatus.oldestEnd?.getTime(), byStatus.newestEnd?.getTime()]).toEqual([all.newestEnd?.getTime(), all.newestEnd?.getTime()]);
    expect((await store.runPurge({ olderThanMs: DAY, limit: 10, workflowName: 'other' })).roots).toEqual([other.id]);
    expect(await exists(store, ok.id)).toBe(true);
    const none = await store.runPurge({ olderThanMs: DAY, limit: 10, workflowName: 'other' });
    expect([none.roots, none.oldestEnd, none.newestEnd]).toEqual([[], null, null]);
  });

  it('a tree goes whole once every run in it ended; a child never goes alone', async () => {
    const { store, advance } = h();
    const { run: parent, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [step('spawn')] });
    const { run: done } = await store.runCreate(runParams({ parentRunId: parent.id, parentSeq: 0 }));
    const { run: live } = await store.runCreate(runParams({ parentRunId: parent.id, parentSeq: 0 }));
    const l1 = await store.runLeaseAcquire({ runId: done.id, holder: 'w', ttlMs: TTL });
    await store.runStatusSet({ lease: l1!, status: 'SUCCEEDED', output: 1 });
    await advance(40 * DAY);
    // The parent is running: nothing of the tree goes, not even the child that ended long ago.
    expect((await store.runPurge({ olderThanMs: DAY, limit: 10 })).runIds).toEqual([]);
    await store.runStatusSet({ lease, status: 'SUCCEEDED', output: 2 });
    await advance(40 * DAY);
    // The parent ended, but one child has not: still nothing.
    expect((await store.runPurge({ olderThanMs: DAY, limit: 10 })).runIds).toEqual([]);
    const l2 = await store.runLeaseAcquire({ runId: live.id, holder: 'w', ttlMs: TTL });
    await store.runStatusSet({ lease: l2!, status: 'FAILED', error: { name: 'E', message: 'm' } });
    // The child ended just now: the root's end decides, and it is old enough.
    const purged = await store.runPurge({ olderThanMs: DAY, limit: 10 });
    expect(purged.roots).toEqual([parent.id]);
    expect(new Set(purged.runIds)).toEqual(new Set([parent.id, done.id, live.id]));
    for (const id of [parent.id, done.id, live.id]) expect(await exists(store, id)).toBe(false);
  });

  it('deletes the rows keyed by the run: buffered signals, remote tasks, delivered webhooks; keeps a run whose delivery is pending', async () => {
    const { store, advance } = h();
    await store.webhookEndpointCreate({ id: 'we_1', namespace: 'default', url: 'https://example.test/hook', events: ['run.finished'], secret: 'whsec_0123456789abcdef0123456789abcdef', description: '' });
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [suspension('tool', { kind: 'tool' })] });
    await store.remoteTaskCreate({ namespace: 'default', runId: run.id, seq: 0, tool: 't', queue: 'default', input: {}, idempotencyKey: 'k', maxAttempts: 1, heartbeatTimeoutMs: 1000, deadlineAt: new Date(Date.parse('2100-01-01')) });
    await store.signalDeliver({ runId: run.id, name: 'late', signalId: 's1', dedupeKey: 'signal:s1', payload: { x: 1 }, target: null });
    await store.runStatusSet({ lease, status: 'SUCCEEDED', output: null });
    await advance(31 * DAY);
    expect((await store.runPurge({ olderThanMs: 30 * DAY, limit: 10 })).runIds).toEqual([]); // its webhook is not delivered yet
    const [claim] = await store.webhookDeliveryClaim({ limit: 10, claimTtlMs: 60_000, claimToken: 'c' });
    await store.webhookDeliveryComplete({ deliveryId: claim!.delivery.id, claimToken: 'c', outcome: { state: 'delivered', status: 200 } });
    expect((await store.runPurge({ olderThanMs: 30 * DAY, limit: 10 })).runIds).toEqual([run.id]);
    expect(await store.remoteTaskList({ runId: run.id })).toEqual([]);
    expect((await store.webhookDeliveryList({ namespace: 'default', runId: run.id, limit: 10 })).deliveries).toEqual([]);
    // An idempotency key of a purged run is free again, as its row went (a namespace without webhooks).
    await finishedRun(store, { namespace: 'other', idempotencyKey: 'again' });
    await advance(31 * DAY);
    expect((await store.runPurge({ olderThanMs: 30 * DAY, limit: 10 })).runIds).toHaveLength(1);
    expect((await store.runCreate(runParams({ namespace: 'other', idempotencyKey: 'again' }))).created).toBe(true);
  });

  it('keeps the cost of purged runs as a daily roll-up per namespace and workflow', async () => {
    const { store, advance } = h();
    await finishedRun(store, {}, true);
    await finishedRun(store, {}, true);
    await finishedRun(store, { workflowName: 'cheap' });
    await advance(31 * DAY);
    expect(await store.runCostDailyList({})).toEqual([]);
    await store.runPurge({ olderThanMs: 30 * DAY, limit: 10, dryRun: true });
    expect(await store.runCostDailyList({})).toEqual([]);
    await store.runPurge({ olderThanMs: 30 * DAY, limit: 10 });
    const rows = await store.runCostDailyList({ namespace: 'default' });
    // Summed over days: a run counts on the day it ended, its priced entries on the day each was written.
    const byWorkflow = new Map<string, { runs: number; modelCalls: number; costUsd: number; inputTokens: number; outputTokens: number }>();
    for (const r of rows) {
      expect(r.day).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      const t = byWorkflow.get(r.workflowName) ?? { runs: 0, modelCalls: 0, costUsd: 0, inputTokens: 0, outputTokens: 0 };
      byWorkflow.set(r.workflowName, {
        runs: t.runs + r.runs, modelCalls: t.modelCalls + r.modelCalls, costUsd: t.costUsd + r.costUsd,
        inputTokens: t.inputTokens + r.inputTokens, outputTokens: t.outputTokens + r.outputTokens,
      });
    }
    expect(Object.fromEntries(byWorkflow)).toEqual({
      cheap: { runs: 1, modelCalls: 0, costUsd: 0, inputTokens: 0, outputTokens: 0 },
      refund: { runs: 2, modelCalls: 2, costUsd: 0.5, inputTokens: 200, outputTokens: 40 },
    });
    const last = rows.map((r) => r.day).sort().at(-1)!;
    expect((await store.runCostDailyList({ workflowName: 'refund', fromDay: '1999-01-01', toDay: last })).every((r) => r.workflowName === 'refund')).toBe(true);
    expect(await store.runCostDailyList({ toDay: '1999-01-01' })).toEqual([]);
    expect(await store.runCostDailyList({ namespace: 'other' })).toEqual([]);
  });

  it('a purge carrying a leader lease that is not current is refused and deletes nothing', async () => {
    const { store, advance } = h();
    const run = await finishedRun(store);
    await advance(31 * DAY);
    const lease = await store.sweeperLeaseAcquire({ holder: 'a', ttlMs: TTL });
    await store.sweeperLeaseRelease({ lease: lease! });
    await store.sweeperLeaseAcquire({ holder: 'b', ttlMs: TTL });
    await expect(store.runPurge({ olderThanMs: DAY, limit: 10, leader: lease! })).rejects.toBeInstanceOf(SweeperLeaseLostError);
    expect(await exists(store, run.id)).toBe(true);
  });
}
