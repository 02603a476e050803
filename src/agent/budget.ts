import type { Run } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { roundUsd } from './prices.js';

/*
 * Budgets (docs/agents.md "Budgets"). Spend is folded from the journal only: the sum of `costUsd`
 * over a run's entries, plus the same over its child runs, recursively. Nothing is kept in memory,
 * so a crash, a resume on another replica, or a replay can never count a call twice or forget one:
 * a replayed call writes no entry, and a call lost in a crash (intent without outcome) has no cost
 * recorded (its price is unknown; the provider may or may not bill it).
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
}

const PAGE = 100;
/** Deeper trees are not followed; ctx.child chains this deep are not expected. */
const MAX_DEPTH = 32;

export async function runSpend(params: { store: JournalStore; runId: string; namespace: string }): Promise<RunSpend> {
  return spendOf(params.store, params.runId, params.namespace, 0);
}

async function spendOf(store: JournalStore, runId: string, namespace: string, depth: number): Promise<RunSpend> {
  let own = 0;
  let priced = 0;
  // Summed in seq order, so every reader of the same journal gets the same float.
  for (const e of await store.journalList({ runId, namespace })) {
    if (e.costUsd !== null) {
      own += e.costUsd;
      priced++;
    }
  }
  let children = 0;
  if (depth < MAX_DEPTH) {
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<JournalStore['runList']>> = await store.runList({ namespace, parentRunId: runId, pageSize: PAGE, cursor });
      for (const child of page.runs) {
        const s = await spendOf(store, child.id, namespace, depth + 1);
        children += s.totalUsd;
        priced += s.pricedCalls;
      }
      cursor = page.nextCursor;
    } while (cursor);
  }
  return { runId, ownUsd: roundUsd(own), childrenUsd: roundUsd(children), totalUsd: roundUsd(own + children), pricedCalls: priced };
}

export type BudgetVerdict =
  | { kind: 'within' }
  | { kind: 'exceeded'; budgetRunId: string; budgetUsd: number; spentUsd: number; estimatedCostUsd: number }
  | { kind: 'unpriced'; budgetRunId: string };

/**
 * Whether a call estimated at `estimateUsd` (null: the model has no price) may be made by `run`:
 * every budget on the way up (the run's, its parent's, …) must still hold spend + estimate. A
 * child's spend counts toward its ancestors' budgets, so a child cannot spend what its parent
 * may not. Equal to the budget is allowed; passing it is not.
 */
export async function budgetVerdict(params: { store: JournalStore; run: Run; estimateUsd: number | null }): Promise<BudgetVerdict> {
  const { store } = params;
  let current: Run | null = params.run;
  for (let depth = 0; current && depth <= MAX_DEPTH; depth++) {
    if (current.budgetUsd !== null) {
      if (params.estimateUsd === null) return { kind: 'unpriced', budgetRunId: current.id };
      const spent = (await runSpend({ store, runId: current.id, namespace: current.namespace })).totalUsd;
      if (spent + params.estimateUsd > current.budgetUsd) {
        return { kind: 'exceeded', budgetRunId: current.id, budgetUsd: current.budgetUsd, spentUsd: spent, estimatedCostUsd: params.estimateUsd };
      }
    }
    current = current.parentRunId ? await store.runGet({ runId: current.parentRunId, namespace: current.namespace }) : null;
  }
  return { kind: 'within' };
}
