// read/: spend folded from the journal alone (the costUsd of a run's entries and its children's).
// Must not keep spend in memory: a crash, a resume or a replay must never count a call twice.
import type { JournalStore } from '../../store/store.js';

/*
 * Spend (docs/agents.md "Budgets"), folded from the journal only: the sum of `costUsd` over a
 * run's entries, plus the same over its child runs, recursively. Nothing is kept in memory, so a
 * crash, a resume on another replica, or a replay can never count a call twice or forget one: a
 * replayed call writes no entry, and a call lost in a crash (intent without outcome) has no cost
 * recorded (its price is unknown; the provider may or may not bill it). Budgets (agent/budget.ts),
 * GetRun, ListRuns and GetRunProvenance all read it from here.
 * Reservations (docs/agents.md "Budget admission") are folded the same way: a model call's intent
 * (its `running` entry) carries the call's estimated cost, reserved until the call's terminal entry
 * (pointing at it by refSeq) settles it; a redispatched call reuses its intent.
 */

export interface RunSpend {
  runId: string;
  /** Sum of the run's own entries' costUsd. */
  ownUsd: number;
  /** Sum over its child runs (and theirs). */
  childrenUsd: number;
  totalUsd: number;
  /** Entries with a cost (model calls that completed). */
  pricedCalls: number;
  /** Estimates of the tree's model calls in flight: intents without a terminal entry yet. */
  reservedUsd: number;
}

/** Deeper trees are not followed; ctx.child chains this deep are not expected. */
export const MAX_SPEND_DEPTH = 32;

/** USD amounts are kept to 1e-10 (a tenth of a nano-dollar), so sums read the same everywhere. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

/**
 * The spend of a run and its children, folded by the store (journalSpend: one statement on
 * PostgreSQL over the tree's priced entries and model intents, so a run of 10,000 step entries
 * costs what one of 10 does; issue 22).
 */
export async function runSpend(params: { store: JournalStore; runId: string; namespace: string }): Promise<RunSpend> {
  const s = await params.store.journalSpend({ runId: params.runId, namespace: params.namespace, maxDepth: MAX_SPEND_DEPTH });
  return {
    runId: params.runId, ownUsd: roundUsd(s.ownUsd), childrenUsd: roundUsd(s.childrenUsd), totalUsd: roundUsd(s.ownUsd + s.childrenUsd),
    pricedCalls: s.pricedCalls, reservedUsd: roundUsd(s.reservedUsd),
  };
}

/** Each run's own spend (its entries only, not its children's), in one summing read: what a listing shows. */
export async function ownSpend(params: { store: JournalStore; namespace: string; runIds: string[] }): Promise<Map<string, number>> {
  const totals = await params.store.journalCostTotals({ namespace: params.namespace, runIds: params.runIds });
  return new Map(params.runIds.map((id) => [id, roundUsd(totals.get(id) ?? 0)]));
}
