import type { JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Lease } from '../journal/run.js';
import type { SweeperLease } from './sweeper-params.js';
import type { RunLeaseAcquireRunningResult, RunRouting } from './run-params.js';

/*
 * Parameters and results of the JournalStore's journal, wake-up and budget-lock methods (JournalOps,
 * at the end of this file, says what each does).
 */

export interface JournalAppendParams {
  lease: Lease;
  /** Appended in order, at consecutive seqs, all or none. */
  entries: NewJournalEntry[];
}

export interface JournalListParams {
  runId: string;
  /** Entries with a greater seq; -1 (the default) lists from the start. */
  afterSeq?: number;
  /** At most this many; default all. */
  limit?: number;
  namespace?: string;
  /**
   * `inline` (the default): every entry with its payload, those stored out of line fetched with the
   * page in the same read (replay, resume, forks). `reference`: an entry whose payload is stored out
   * of line comes back with `payload` null and `payloadRef` set, so a page reads small rows
   * (GetJournal, listings). docs/journal.md "Large payloads".
   */
  payloads?: 'inline' | 'reference';
}

export interface JournalCostTotalsParams {
  runIds: string[];
  namespace?: string;
}

/** Run id to the sum of its own entries' `costUsd`; unknown ids are absent. */
export type JournalCostTotalsResult = Map<string, number>;

export interface JournalWaitsParams {
  runId: string;
  namespace: string;
  /** Only the entry at this seq (when it is a `suspended` entry). */
  seq?: number;
}

/** A `suspended` entry and the entries that refer to it (refSeq = its seq), in seq order. */
export interface JournalWait {
  entry: JournalEntry;
  referrers: JournalEntry[];
}

export interface JournalSpendParams {
  runId: string;
  namespace: string;
  /** Child runs deeper than this below `runId` are not counted (the root is depth 0). */
  maxDepth: number;
}

/** What a run tree spent and holds reserved, unrounded (engine/read/spend.ts rounds it). */
export interface JournalSpendResult {
  /** Sum of the run's own entries' costUsd. */
  ownUsd: number;
  /** The same over its child runs, recursively, down to maxDepth. */
  childrenUsd: number;
  /** Entries with a cost, over the tree. */
  pricedCalls: number;
  /** Estimates (payload.estimatedCostUsd > 0) of `model` intents (`running`) no entry refers to yet, over the tree. */
  reservedUsd: number;
}

export interface JournalResolveParams {
  runId: string;
  namespace?: string;
  /** The seq of the suspension this resolves. */
  suspensionSeq: number;
  /** The resolution; the store sets its `status` and `refSeq`. */
  entry: NewJournalEntry;
  /** The sweeper's fence (see RunStatusForceParams). */
  leader?: SweeperLease;
  /**
   * When this resolution is applied and the run is PENDING after it (it was SUSPENDED), take the
   * run's lease for `holder` in the same atomic step and journal its RUNNING entry after the
   * resolution, as SignalDeliverParams.leaseFor does: the caller executes the run, and no other
   * replica's executor races it for the claim. Absent: the run becomes PENDING as before.
   */
  leaseFor?: { holder: string; ttlMs: number; routing?: RunRouting };
}

export interface JournalResolveResult {
  /** The entry written (`resolved` or `noop`), or for a duplicate the one written first. */
  entry: JournalEntry;
  /** This call's resolution is the suspension's winner. */
  applied: boolean;
  /** The dedupeKey was seen before; nothing was written. */
  duplicate: boolean;
  /** The suspension's winning resolution, whoever wrote it. */
  winner: JournalEntry;
  /** With `leaseFor` and an applied resolution: the lease taken (null: the run was RUNNING, so it was flagged instead, or `routing` sends it to another replica's claim). */
  taken?: RunLeaseAcquireRunningResult | null;
}

export interface WakeupSubscribeParams {
  /** Only wake-ups for this run (and resyncs, as `onRun(runId)`). */
  runId?: string;
  /** The run's journal grew, or it became claimable: a hint; catch up from your own cursor. */
  onRun?: (runId: string) => void;
  /** The run's model call deltas grew (modelDeltaAppend): a hint, as onRun. */
  onDelta?: (runId: string) => void;
  /** Some run became PENDING. */
  onPending?: () => void;
  /** A remote task of this namespace became claimable (created, or pending again after a retry). */
  onTask?: (namespace: string) => void;
  /** Wake-ups may have been missed (the store reconnected): catch up on everything followed. */
  onResync?: () => void;
}

/** Ends a subscription. */
export type WakeupUnsubscribe = () => Promise<void>;

export interface BudgetLockParams {
  namespace: string;
  /** The root of the run tree (the run with no parent) whose budgets the caller checks. */
  rootRunId: string;
}

export interface BudgetLock {
  release(): Promise<void>;
}

/**
 * The journal: fenced appends, reads, resolutions from outside, the spend folded over a run tree
 * and its admission lock, and wake-ups. Part of JournalStore (store.ts), whose contract holds for
 * each method.
 */
export interface JournalOps {
  /**
   * Fenced append of one or more entries, all or none, at consecutive seqs, checked against the
   * lease in the same atomic step as the write (a stale holder's append can never land after a new
   * holder read the journal). Throws LeaseLostError when fenced, JournalFullError past the entry
   * limit, PayloadTooLargeError past the payload limit (nothing written).
   */
  journalAppend(params: JournalAppendParams): Promise<JournalEntry[]>;
  /**
   * Entries with seq > afterSeq (afterSeq -1 = from the start), in seq order, at most `limit`
   * (default: all). Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  journalList(params: JournalListParams): Promise<JournalEntry[]>;
  /**
   * Per run id, the sum of `costUsd` over the run's own entries (not its children's): 0 when none
   * has a cost. One read for a page of runs (ListRuns' `spent_usd`). Unknown ids (or ids outside
   * `namespace`) are absent from the map; nothing throws for them.
   */
  journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult>;
  /**
   * The spend of run `runId` and its child runs (recursively, to `maxDepth`) and the reservations
   * of their model calls in flight (docs/agents.md "Budgets"), folded by the store. Its cost grows
   * with the tree's runs and model calls, not with its other entries (issue 22: GetRun and the
   * budget check before each model call). Throws RunNotFoundError for an unknown run (or one
   * outside `namespace`).
   */
  journalSpend(params: JournalSpendParams): Promise<JournalSpendResult>;
  /**
   * The run's `suspended` entries in seq order (or only the one at `seq`), each with every entry
   * that refers to it: its resolutions (`resolved`, `noop`) and cancellations. What GetApproval,
   * DecideApproval and GetRun's waiting_on read instead of the whole journal; its cost grows with
   * the run's waits, not its other entries. Throws RunNotFoundError for an unknown run (or one
   * outside `namespace`).
   */
  journalWaits(params: JournalWaitsParams): Promise<JournalWait[]>;
  /**
   * Appends a resolution of the suspension at `suspensionSeq` without a lease, serialised with the
   * run's other writes:
   * - a repeated `dedupeKey` on the same run returns the first entry with `duplicate: true` and writes nothing;
   * - the first resolution of a suspension is `resolved` (applied); later ones are `noop` (already resolved);
   * - a SUSPENDED run with an applied resolution becomes PENDING (claimable); a RUNNING one is
   *   flagged so its next move to SUSPENDED becomes PENDING instead (see runStatusSet);
   * - the store sets the entry's `status` and `refSeq`; the caller's values for them are ignored.
   * The caller validates the payload against the suspension's pinned schema before calling.
   * Throws RunNotFoundError, RunStateError when `suspensionSeq` is not a suspension or the run is
   * terminal (a duplicate dedupeKey is still answered), PayloadTooLargeError, JournalFullError.
   */
  journalResolve(params: JournalResolveParams): Promise<JournalResolveResult>;
  /**
   * Wake-ups. `onRun` fires for a run when its journal grew (appends, status entries, resolutions)
   * or it became claimable (a hint; catch up with journalList from your own cursor). `onPending`
   * fires when some run became PENDING: created, released, resolved while SUSPENDED, recovered.
   * The subscription outlives a lost connection to the store, and a wake-up is delivered when it
   * is back so callers catch up: `onRun(runId)` for a subscriber filtered to one run, `onPending()`,
   * and `onResync()` (for subscribers that follow every run and so need a full catch-up).
   * Resolves once the subscription is live: anything written afterwards wakes it.
   */
  wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe>;
  /**
   * Serialises budget admission over one run tree (docs/agents.md "Budget admission"): resolves once
   * the caller holds the tree's lock, against every caller on this store in any process. `release`
   * gives it back (idempotent); a holder whose process dies loses it. A wait that cannot be served
   * (the database is gone, or another holder kept it too long) throws StoreUnavailableError.
   */
  budgetLock(params: BudgetLockParams): Promise<BudgetLock>;
}
