import type { Run, RunError, RunStatus } from '../journal/run.js';

/*
 * Parameters and results of the JournalStore's sweeper methods: recovery, due deadlines, the
 * parent/child scans and the leader lease (store.ts says what each does).
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
