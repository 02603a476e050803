import type { RunStatus } from '../journal/run.js';
import type { SweeperLease } from './sweeper-params.js';

/*
 * Parameters and results of the JournalStore's retention methods (RetentionOps, at the end of this
 * file): purging finished run trees and the daily cost roll-up that outlives them
 * (docs/operations.md "Retention").
 */

export interface RunPurgeParams {
  /** Only runs that finished (their last status change) at least this long ago, store clock. */
  olderThanMs: number;
  /** Only runs of this namespace; absent: every namespace but `exceptNamespaces`. */
  namespace?: string;
  /** Namespaces left alone (the sweeper purges those with their own horizon in calls of their own). */
  exceptNamespaces?: string[];
  /** Only root runs that ended with one of these statuses (terminal ones; others match nothing); absent: any. */
  statuses?: RunStatus[];
  /** Only root runs of this workflow; absent: any. */
  workflowName?: string;
  /** Root runs per call: each is purged with its descendants in one transaction. */
  limit: number;
  /** Count what would go, delete nothing. */
  dryRun?: boolean;
  /** The sweeper's fence (see RunStatusForceParams); absent for an operator's purge. */
  leader?: SweeperLease;
}

export interface RunPurgeResult {
  /** Root runs purged (or, with dryRun, that would be), oldest end first. */
  roots: string[];
  /** Every run purged: the roots and all their descendants. */
  runIds: string[];
  /** Journal entries that went with them. */
  entries: number;
  /** When the first and the last of `roots` ended; null when there are none. */
  oldestEnd: Date | null;
  newestEnd: Date | null;
}

export interface RunCostDailyListParams {
  namespace?: string;
  workflowName?: string;
  /** Inclusive UTC days, YYYY-MM-DD. */
  fromDay?: string;
  toDay?: string;
}

/**
 * The cost ledger of purged runs, one row per namespace, workflow and UTC day: `runs` counts the
 * runs purged that ended that day; the other figures sum the priced journal entries written that
 * day (model calls, USD, tokens), so the roll-up of a day says what was spent on it.
 */
export interface RunCostDaily {
  namespace: string;
  workflowName: string;
  day: string;
  runs: number;
  modelCalls: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
}

/**
 * Retention: what the sweeper's retention duty and `waymark runs purge` call. Part of JournalStore
 * (store.ts), whose contract holds for each method.
 */
export interface RetentionOps {
  /**
   * Deletes run trees that ended: a root run (no parent) that is terminal and ended at least
   * `olderThanMs` ago goes with all its descendants, in one transaction, once every one of them is
   * terminal and none has a webhook delivery still pending; a child run never goes alone. The
   * runs' journal entries, deadlines, buffered signals, remote tasks and webhook deliveries go
   * with them, and their priced entries are first added to the daily roll-up (runCostDailyList).
   * PENDING, RUNNING and SUSPENDED runs are never deleted. Runs another transaction holds are
   * skipped, never waited for (test/conformance/retention.conformance.ts).
   */
  runPurge(params: RunPurgeParams): Promise<RunPurgeResult>;
  /** The cost roll-up of purged runs, by day then namespace then workflow. */
  runCostDailyList(params: RunCostDailyListParams): Promise<RunCostDaily[]>;
}
