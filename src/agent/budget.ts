import type { Run } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { MAX_SPEND_DEPTH, runSpend } from '../engine/read/spend.js';

/*
 * Budgets (docs/agents.md "Budgets"): before each model call, every budget on the way up the run
 * tree must still hold the spend folded from the journal (engine/read/spend.ts) plus the call's
 * estimate.
 */

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
  for (let depth = 0; current && depth <= MAX_SPEND_DEPTH; depth++) {
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
