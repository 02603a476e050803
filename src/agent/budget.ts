import type { Run } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { MAX_SPEND_DEPTH, runSpend } from '../engine/index.js';

/*
 * Budgets (docs/agents.md "Budgets" and "Budget admission"): before each model call, every budget
 * on the way up the run tree must still hold the spend folded from the journal, plus the
 * reservations of calls in flight (engine/read/spend.ts), plus the call's estimate.
 */

export type BudgetVerdict =
  | { kind: 'within' }
  | { kind: 'exceeded'; budgetRunId: string; budgetUsd: number; spentUsd: number; reservedUsd: number; estimatedCostUsd: number }
  | { kind: 'unpriced'; budgetRunId: string };

/** The runs from `run` up to its tree's root, and whether any of them has a budget. */
export async function budgetChain(params: { store: JournalStore; run: Run }): Promise<{ chain: Run[]; rootRunId: string; budgeted: boolean }> {
  const chain: Run[] = [];
  let current: Run | null = params.run;
  for (let depth = 0; current && depth <= MAX_SPEND_DEPTH; depth++) {
    chain.push(current);
    current = current.parentRunId ? await params.store.runGet({ runId: current.parentRunId, namespace: current.namespace }) : null;
  }
  return { chain, rootRunId: chain[chain.length - 1]!.id, budgeted: chain.some((r) => r.budgetUsd !== null) };
}

/**
 * Whether a call estimated at `estimateUsd` (null: the model has no price) may be made by the first
 * run of `chain`: every budget on the way up (the run's, its parent's, …) must still hold spend,
 * plus the reservations of calls in flight anywhere in that budget's tree, plus this estimate. A
 * child's spend counts toward its ancestors' budgets, so a child cannot spend what its parent may
 * not. Equal to the budget is allowed; passing it is not. The caller holds the tree's budgetLock,
 * so no other call is admitted between this verdict and the caller's intent.
 */
export async function budgetVerdict(params: { store: JournalStore; chain: Run[]; estimateUsd: number | null }): Promise<BudgetVerdict> {
  const { store } = params;
  for (const current of params.chain) {
    if (current.budgetUsd === null) continue;
    if (params.estimateUsd === null) return { kind: 'unpriced', budgetRunId: current.id };
    const spend = await runSpend({ store, runId: current.id, namespace: current.namespace });
    if (spend.totalUsd + spend.reservedUsd + params.estimateUsd > current.budgetUsd + 1e-12) {
      return {
        kind: 'exceeded', budgetRunId: current.id, budgetUsd: current.budgetUsd, spentUsd: spend.totalUsd,
        reservedUsd: spend.reservedUsd, estimatedCostUsd: params.estimateUsd,
      };
    }
  }
  return { kind: 'within' };
}
