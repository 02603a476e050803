import type { JournalStore } from '../store/store.js';

/**
 * Duty 7 of the sweeper: model call deltas stored more than `retentionMs` ago (the store's clock)
 * are deleted, `limit` at a time (docs/agents.md "Token streams"). A delta is read while its call
 * runs and shortly after, and the call's result stays in the journal, so an hour is generous.
 * Returns how many were deleted.
 */
export async function sweepDeltas(p: { store: JournalStore; retentionMs: number; limit: number; maxBatches: number }): Promise<number> {
  const before = new Date((await p.store.clockNow()).getTime() - p.retentionMs);
  let total = 0;
  for (let i = 0; i < p.maxBatches; i++) {
    const deleted = await p.store.modelDeltaSweep({ before, limit: p.limit });
    total += deleted;
    if (deleted < p.limit) break;
  }
  return total;
}
