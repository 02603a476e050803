import type { Run, RunError, RunStatus } from '../journal/run.js';
import type { JournalEntry } from '../journal/journal-entry.js';

/*
 * Parameters and results of the JournalStore's sweeper methods: recovery, due deadlines, the
 * parent/child scans and the leader lease (SweeperOps, at the end of this file, says what each does).
 */

/** Proof of being the active sweeper of a store: the fencing epoch its writes carry. */
export interface SweeperLease {
  holder: string;
  epoch: number;
  expiresAt: Date;
}

export interface RunRecoverExpiredParams {
  limit: number;
  /** Recoveries in a row without progress after which a run is failed instead. */
  maxRecoveries: number;
  /** Runs younger than this are left alone. */
  graceMs: number;
  /** The error a run failed for too many recoveries ends with. */
  failError: RunError;
  /**
   * A lease that expired before the database had been up this long was cut off by a database
   * restart, so its recovery does not count towards maxRecoveries (docs/recovery.md "Database
   * outages"; the sweeper passes the lease TTL). Absent: every recovery counts. A store whose
   * database never restarts under it (memory) ignores it.
   */
  outageGraceMs?: number;
  /** The sweeper's fence (see RunStatusForceParams). */
  leader?: SweeperLease;
}

export interface RunRecoverDeadSessionsParams {
  limit: number;
  /** As in RunRecoverExpiredParams: a recovery counts the same whatever found it. */
  maxRecoveries: number;
  failError: RunError;
  /** The sweeper's fence (see RunStatusForceParams). */
  leader?: SweeperLease;
}

/** The lease holder (the `holder` its leases carry) a lease session is for. */
export interface LeaseSessionParams {
  holder: string;
}

export interface RunRecoverExpiredResult {
  /** Run ids made claimable again, in no particular order. */
  recovered: string[];
  /** Run ids failed after maxRecoveries, in no particular order. */
  failed: string[];
}

export interface SuspensionListDueParams {
  limit: number;
  /** Entry kinds to consider; absent: every kind. */
  kinds?: string[];
}

/** deadlineNext's answer: the earliest deadline still ahead, and the store's clock it was read on. */
export interface DeadlineNext {
  /** The earliest deadline after `now` of an open suspension or an unfinished run; null: none. */
  at: Date | null;
  now: Date;
}

export interface RunListEndedChildrenParams {
  limit: number;
  graceMs: number;
}

export interface RunListOrphansParams {
  limit: number;
  graceMs: number;
}

/** An unfinished child run whose parent ended, with how the parent ended. */
export interface OrphanedRun {
  run: Run;
  parentStatus: RunStatus;
  /** The parent's error (a FAILED parent's reason says whether it timed out); null when none. */
  parentError: RunError | null;
}

export interface RunListTimedOutParams {
  limit: number;
}

export interface SweeperLeaseAcquireParams {
  holder: string;
  ttlMs: number;
}

export interface SweeperLeaseRenewParams {
  lease: SweeperLease;
  ttlMs: number;
}

export interface SweeperLeaseReleaseParams {
  lease: SweeperLease;
}

/**
 * What the sweeper reads and does: recoveries (expired leases, dead lease sessions), due
 * deadlines, the parent/child and timeout scans, and its leader lease. Part of JournalStore
 * (store.ts), whose contract holds for each method.
 */
export interface SweeperOps {
  /**
   * Sweeper: RUNNING runs whose lease expired become PENDING (recoveryCount + 1, epoch bumped); a run
   * that already used `maxRecoveries` is FAILED instead with `failError`. A journalAppend resets
   * recoveryCount to 0: a recovery after which the run made progress did not fail, so only
   * `maxRecoveries` recoveries in a row without progress fail a run (DESIGN "3 failed recoveries").
   * Concurrent sweepers never recover one run twice, and skip runs another is busy with rather
   * than wait. Ignores runs younger than `graceMs`. A FAILED run gets a `status` entry (its
   * terminal event); a recovery journals nothing.
   */
  runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult>;
  /**
   * Holds a session for lease holder `holder` whose end marks its leases dead (docs/recovery.md
   * "Dead sessions"): on PostgreSQL a dedicated connection holding a session advisory lock, which
   * ends with the holder's process. Resolves once registered; a lost session is reopened on its
   * own. Leases of a holder that never opened one only expire. Idempotent per holder.
   */
  leaseSessionOpen(params: LeaseSessionParams): Promise<void>;
  /** Ends `holder`'s session cleanly: its registration goes first, so its leases go back to expiring. */
  leaseSessionClose(params: LeaseSessionParams): Promise<void>;
  /**
   * Sweeper: RUNNING runs whose holder's lease session has ended are recovered exactly as
   * runRecoverExpired recovers expired ones (PENDING, or FAILED after `maxRecoveries`; epoch
   * bumped), whatever their lease's expiry and age. Never takes a run whose holder's session is
   * alive, nor one whose holder never opened a session (test/conformance/lease-sessions.conformance.ts).
   */
  runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult>;
  /**
   * Open (unresolved) suspensions whose `deadlineAt` (payload.deadlineAt, ISO) passed on the store's
   * clock, earliest deadline first, in runs that are not terminal. `kinds` filters by entry kind.
   */
  suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]>;
  /**
   * Sweeper: the earliest deadline still in the future on the store's clock, of an open suspension
   * (suspensionListDue's) or of an unfinished run (runListTimedOut's), so the sweeper can be there
   * when it passes rather than at its next pass. Reads only; deadlines already passed are not
   * reported (the pass that found them due resolves them).
   */
  deadlineNext(): Promise<DeadlineNext>;
  /**
   * Sweeper: ended (terminal) child runs whose parent is not terminal and whose `child` wait at
   * `parentSeq` has no winning resolution yet (the parent missed the wake-up in a crash). Only
   * children that ended at least `graceMs` ago, so the engine's own resolution goes first.
   */
  runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]>;
  /**
   * Sweeper: unfinished child runs whose parent ended at least `graceMs` ago, with the parent's
   * status (a cancelled parent cancels the child; any other end fails it).
   */
  runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]>;
  /**
   * Sweeper: unfinished (PENDING, RUNNING, SUSPENDED) runs whose `deadlineAt` passed on the store's
   * clock, earliest deadline first (then id), at most `limit`. Reads only: the sweeper fails each
   * with runStatusForce (docs/recovery.md "Run timeouts").
   */
  runListTimedOut(params: RunListTimedOutParams): Promise<Run[]>;
  /**
   * The sweeper leader lease: one per store, so among several sweepers exactly one acts.
   * Takes it when free or expired, bumping its epoch; null when another holds it.
   * Sweeper writes carry the lease (`leader`) and are fenced by its epoch, so a paused
   * ex-leader's writes land before a takeover or not at all.
   */
  sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null>;
  /** Extends the leader lease (even an expired one nobody took); SweeperLeaseLostError when fenced. */
  sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease>;
  /** Gives leadership up (another sweeper may take it at once); a fenced release does nothing. */
  sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void>;
}
