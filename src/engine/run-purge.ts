// engine/: runPurge, an operator's purge of finished runs (PurgeRuns, `waymark runs purge`): batches of the store's runPurge.
// Must not choose what may go (the store's runPurge keeps parked, pending and running runs) nor hold a transaction across batches.
import type { RunStatus } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';

/*
 * An operator's purge (docs/operations.md "Purging runs"): the same deletes as the sweeper's
 * retention duty (store/retention-params.ts runPurge: whole finished trees, their rows, the cost
 * roll-up kept), with a filter, in batches of at most PURGE_DEFAULTS.batchSize root runs, each one
 * short transaction, up to `limit` root runs per call. A dry run is one read of up to `limit`
 * root runs that deletes nothing.
 */

/** `maxOlderThanMs`: 100 years; a horizon past the calendar the store keeps cannot be computed (PurgeRuns refuses it). */
export const PURGE_DEFAULTS = { limit: 1000, maxLimit: 10_000, batchSize: 50, maxOlderThanMs: 36_500 * 86_400_000 };

export interface RunPurgeFilter {
  namespace: string;
  /** Root runs that ended at least this long ago. */
  olderThanMs: number;
  /** Terminal statuses of the root run; absent: any of the three. */
  statuses?: RunStatus[];
  workflowName?: string;
  dryRun: boolean;
  /** Most root runs this call deletes (or counts); PURGE_DEFAULTS.limit when absent. */
  limit?: number;
}

export interface RunPurgeSummary {
  dryRun: boolean;
  rootRuns: number;
  runs: number;
  entries: number;
  oldestEnd: Date | null;
  newestEnd: Date | null;
  /** The call stopped at its limit: more runs may match. */
  more: boolean;
}

export async function runPurge(store: JournalStore, filter: RunPurgeFilter): Promise<RunPurgeSummary> {
  if (!(filter.olderThanMs >= 0 && filter.olderThanMs <= PURGE_DEFAULTS.maxOlderThanMs)) {
    throw new RangeError(`olderThanMs must be 0 to ${PURGE_DEFAULTS.maxOlderThanMs}, got ${filter.olderThanMs}`);
  }
  const limit = filter.limit ?? PURGE_DEFAULTS.limit;
  const scan = {
    namespace: filter.namespace, olderThanMs: filter.olderThanMs,
    ...(filter.statuses ? { statuses: filter.statuses } : {}), ...(filter.workflowName ? { workflowName: filter.workflowName } : {}),
  };
  const summary: RunPurgeSummary = { dryRun: filter.dryRun, rootRuns: 0, runs: 0, entries: 0, oldestEnd: null, newestEnd: null, more: false };
  const add = (r: Awaited<ReturnType<JournalStore['runPurge']>>) => {
    summary.rootRuns += r.roots.length;
    summary.runs += r.runIds.length;
    summary.entries += r.entries;
    if (r.oldestEnd && (!summary.oldestEnd || r.oldestEnd < summary.oldestEnd)) summary.oldestEnd = r.oldestEnd;
    if (r.newestEnd && (!summary.newestEnd || r.newestEnd > summary.newestEnd)) summary.newestEnd = r.newestEnd;
  };
  if (filter.dryRun) {
    const r = await store.runPurge({ ...scan, limit, dryRun: true });
    add(r);
    summary.more = r.roots.length >= limit;
    return summary;
  }
  while (summary.rootRuns < limit) {
    const batch = Math.min(PURGE_DEFAULTS.batchSize, limit - summary.rootRuns);
    const r = await store.runPurge({ ...scan, limit: batch });
    add(r);
    if (r.roots.length < batch) return summary;
  }
  summary.more = true;
  return summary;
}
