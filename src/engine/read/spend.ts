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

const PAGE = 100;
/** Deeper trees are not followed; ctx.child chains this deep are not expected. */
export const MAX_SPEND_DEPTH = 32;

/** USD amounts are kept to 1e-10 (a tenth of a nano-dollar), so sums read the same everywhere. */
export function roundUsd(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

export async function runSpend(params: { store: JournalStore; runId: string; namespace: string }): Promise<RunSpend> {
  return spendOf(params.store, params.runId, params.namespace, 0);
}

async function spendOf(store: JournalStore, runId: string, namespace: string, depth: number): Promise<RunSpend> {
  let own = 0;
  let priced = 0;
  const open = new Map<number, number>();
  // Summed in seq order, so every reader of the same journal gets the same float.
  for (const e of await store.journalList({ runId, namespace })) {
    if (e.costUsd !== null) {
      own += e.costUsd;
      priced++;
    }
    if (e.kind === 'model' && e.status === 'running') open.set(e.seq, reservationOf(e.payload));
    else if (e.refSeq !== null) open.delete(e.refSeq);
  }
  let reserved = 0;
  for (const usd of open.values()) reserved += usd;
  let children = 0;
  if (depth < MAX_SPEND_DEPTH) {
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<JournalStore['runList']>> = await store.runList({ namespace, parentRunId: runId, pageSize: PAGE, cursor });
      for (const child of page.runs) {
        const s = await spendOf(store, child.id, namespace, depth + 1);
        children += s.totalUsd;
        priced += s.pricedCalls;
        reserved += s.reservedUsd;
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  return {
    runId, ownUsd: roundUsd(own), childrenUsd: roundUsd(children), totalUsd: roundUsd(own + children), pricedCalls: priced, reservedUsd: roundUsd(reserved),
  };
}

/** The estimate a model intent reserved (`estimatedCostUsd`; 0 for an unpriced call or an entry without one). */
function reservationOf(payload: unknown): number {
  const usd = (payload as { estimatedCostUsd?: unknown } | null)?.estimatedCostUsd;
  return typeof usd === 'number' && Number.isFinite(usd) && usd > 0 ? usd : 0;
}

/** Each run's own spend (its entries only, not its children's), in one summing read: what a listing shows. */
export async function ownSpend(params: { store: JournalStore; namespace: string; runIds: string[] }): Promise<Map<string, number>> {
  const totals = await params.store.journalCostTotals({ namespace: params.namespace, runIds: params.runIds });
  return new Map(params.runIds.map((id) => [id, roundUsd(totals.get(id) ?? 0)]));
}
