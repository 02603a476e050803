import type { JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Lease } from '../journal/run.js';
import type { SweeperLease } from './sweeper-params.js';

/* Parameters and results of the JournalStore's journal and wake-up methods (store.ts says what each does). */

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
}

export interface WakeupSubscribeParams {
  /** Only wake-ups for this run (and resyncs, as `onRun(runId)`). */
  runId?: string;
  /** The run's journal grew, or it became claimable: a hint; catch up from your own cursor. */
  onRun?: (runId: string) => void;
  /** Some run became PENDING. */
  onPending?: () => void;
  /** Wake-ups may have been missed (the store reconnected): catch up on everything followed. */
  onResync?: () => void;
}

/** Ends a subscription. */
export type WakeupUnsubscribe = () => Promise<void>;
