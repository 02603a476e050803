import type { JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../journal/run.js';

/**
 * The seam between the engine and a database. Methods are noun-verb and take one params object.
 * Every write that a lease holder makes is fenced: it carries the lease's `epoch`, and a store
 * rejects it with LeaseLostError (never retried) when the run's epoch moved on or the lease was
 * released (runLeaseRelease, or a terminal, SUSPENDED or PENDING status). The lease's expiry is not checked at write
 * time: an expired lease nobody took over still owns the run (the epoch is the fence, as Temporal's
 * shard range_id is), so a slow renewal costs nothing unless a takeover really happened. Writes that need no
 * lease (starting a run, resolving a suspension from outside) lock the run row instead, so `seq`
 * stays dense and ordered. `test/conformance/` runs one suite against every implementation.
 */
export interface JournalStore {
  /**
   * Creates a PENDING run (RUNNING with a lease when `leaseFor` is given), or returns the existing
   * run for a repeated (namespace, idempotencyKey) with `created: false` and no lease. A repeated key
   * naming a different workflow throws IdempotencyConflictError. Nothing is journaled.
   */
  runCreate(params: RunCreateParams): Promise<{ run: Run; created: boolean; lease: Lease | null }>;
  /** Fail-closed addressing: an unknown id or one in another namespace throws RunNotFoundError. */
  runGet(params: { runId: string; namespace: string }): Promise<Run>;
  /** Newest first (createdAt, then id); `nextCursor` is null on the last page. */
  runList(params: RunListParams): Promise<{ runs: Run[]; nextCursor: string | null }>;

  /**
   * Takes the lease on one run if it is free or expired (database clock), bumping the epoch, and
   * commits before returning, so the caller reads the journal only after the bump is durable.
   * With `statuses`, only a run in one of them is taken (default: PENDING or RUNNING with expired lease).
   * The run becomes RUNNING (a run under a lease is executing; a terminal run taken this way, e.g. by
   * ResumeRun, has its output and error cleared). Nothing is journaled: the caller records the
   * RUNNING event with runStatusSet if it wants one.
   * Returns null when someone else holds it or the status does not match; throws RunNotFoundError
   * for an unknown run (or one outside `namespace`, when given).
   */
  runLeaseAcquire(params: {
    runId: string;
    holder: string;
    ttlMs: number;
    statuses?: RunStatus[];
    namespace?: string;
  }): Promise<Lease | null>;
  /** Extends the lease (even an expired one nobody took over); throws LeaseLostError when fenced. */
  runLeaseRenew(params: { lease: Lease; ttlMs: number }): Promise<Lease>;
  /**
   * Gives the lease up. A RUNNING run goes back to PENDING so another executor may claim it at once
   * (graceful shutdown); other statuses are unchanged. A release by a fenced holder does nothing.
   */
  runLeaseRelease(params: { lease: Lease }): Promise<void>;
  /**
   * Claims up to `limit` PENDING runs (oldest first) with FOR UPDATE SKIP LOCKED: sets them RUNNING
   * under a new lease. Two claimers never get the same run.
   */
  runClaim(params: { holder: string; ttlMs: number; limit: number; namespace?: string }): Promise<Lease[]>;
  /**
   * Fenced status change. Appends a `status` journal entry (the event: kind `status`, name and
   * payload.status = the status actually set) in the same transaction. Terminal, SUSPENDED and
   * PENDING statuses release the lease; `output`/`error` are kept only for terminal statuses.
   * A move to SUSPENDED becomes PENDING instead when a resolution was applied while the run was
   * RUNNING under this lease (no lost wake-up; at worst one spare replay). Status entries are exempt
   * from the journal entry limit, so a full journal can still be failed.
   */
  runStatusSet(params: {
    lease: Lease;
    status: RunStatus;
    output?: Json;
    error?: RunError;
  }): Promise<{ run: Run; entry: JournalEntry }>;
  /**
   * Unfenced status change for operators and the sweeper (cancel, fail after recovery attempts):
   * locks the run row, bumps the epoch so the current holder (if any) is fenced off, releases the lease,
   * and appends the `status` entry. No-op returning null when the run is already terminal.
   * RUNNING cannot be forced (TypeError): only a lease holder runs a run.
   */
  runStatusForce(params: {
    runId: string;
    namespace?: string;
    status: RunStatus;
    output?: Json;
    error?: RunError;
  }): Promise<{ run: Run; entry: JournalEntry } | null>;

  /**
   * Fenced append of one or more entries, atomically, at consecutive seqs:
   * `UPDATE runs SET next_seq = next_seq + n WHERE id = $1 AND lease_epoch = $2 RETURNING next_seq`,
   * then the INSERTs, in one transaction. Throws LeaseLostError when fenced,
   * JournalFullError past the entry limit, PayloadTooLargeError past the payload limit (nothing written).
   */
  journalAppend(params: { lease: Lease; entries: NewJournalEntry[] }): Promise<JournalEntry[]>;
  /**
   * Entries with seq > afterSeq (afterSeq -1 = from the start), in seq order, at most `limit`
   * (default: all). Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  journalList(params: { runId: string; afterSeq?: number; limit?: number; namespace?: string }): Promise<JournalEntry[]>;
  /**
   * Appends a resolution of the suspension at `suspensionSeq` without a lease, under the run-row lock:
   * - a repeated `dedupeKey` on the same run returns the first entry with `duplicate: true` and writes nothing;
   * - the first resolution of a suspension is `resolved` (applied); later ones are `noop` (already resolved);
   * - a SUSPENDED run with an applied resolution becomes PENDING (claimable); a RUNNING one is
   *   flagged so its next move to SUSPENDED becomes PENDING instead (see runStatusSet);
   * - the store sets the entry's `status` and `refSeq`; the caller's values for them are ignored.
   * The caller validates the payload against the suspension's pinned schema before calling.
   * Throws RunNotFoundError, RunStateError when `suspensionSeq` is not a suspension or the run is
   * terminal (a duplicate dedupeKey is still answered), PayloadTooLargeError, JournalFullError.
   */
  journalResolve(params: {
    runId: string;
    namespace?: string;
    suspensionSeq: number;
    entry: NewJournalEntry;
  }): Promise<{ entry: JournalEntry; applied: boolean; duplicate: boolean; winner: JournalEntry }>;

  /**
   * Sweeper: RUNNING runs whose lease expired become PENDING (recoveryCount + 1, epoch bumped); a run
   * that already used `maxRecoveries` is FAILED instead with `failError`. Claims with SKIP LOCKED,
   * so concurrent sweepers never recover one run twice. Ignores runs younger than `graceMs`.
   * A FAILED run gets a `status` entry (its terminal event); a recovery journals nothing. The ids
   * come back in no particular order.
   */
  runRecoverExpired(params: {
    limit: number;
    maxRecoveries: number;
    graceMs: number;
    failError: RunError;
  }): Promise<{ recovered: string[]; failed: string[] }>;
  /**
   * Open (unresolved) suspensions whose `deadlineAt` (payload.deadlineAt, ISO) passed on the store's
   * clock, earliest deadline first, in runs that are not terminal. `kinds` filters by entry kind.
   */
  suspensionListDue(params: { limit: number; kinds?: string[] }): Promise<JournalEntry[]>;

  /**
   * Wake-ups. `onRun` fires for a run when its journal grew (appends, status entries, resolutions)
   * or it became claimable (a hint; catch up with journalList from your own cursor). `onPending`
   * fires when some run became PENDING: created, released, resolved while SUSPENDED, recovered.
   * LISTEN is re-established after a connection drop, and a wake-up is delivered on reconnect so
   * callers catch up: `onRun(runId)` for a subscriber filtered to one run, `onPending()`, and
   * `onResync()` (for subscribers that follow every run and so need a full catch-up).
   * Resolves once the subscription is live: anything committed afterwards wakes it.
   * Returns an unsubscribe function.
   */
  wakeupSubscribe(params: {
    runId?: string;
    onRun?: (runId: string) => void;
    onPending?: () => void;
    onResync?: () => void;
  }): Promise<() => Promise<void>>;

  /** Database time (ms since epoch); leases and deadlines use it, never the worker's clock. */
  clockNow(): Promise<Date>;
  close(): Promise<void>;
}

export interface RunCreateParams {
  namespace: string;
  workflowName: string;
  workflowVersion: string;
  workflowDigest: string;
  input: Json;
  labels?: Record<string, string>;
  idempotencyKey?: string | null;
  parentRunId?: string | null;
  parentSeq?: number | null;
  budgetUsd?: number | null;
  dryRun?: boolean;
  /**
   * Take the lease at creation (status RUNNING) so the receiving replica executes it with no queue
   * hop (StartRun with wait). Absent: the run is PENDING for the first executor to claim.
   */
  leaseFor?: { holder: string; ttlMs: number };
}

export interface RunListParams {
  namespace: string;
  statuses?: RunStatus[];
  workflowName?: string;
  /** Every label given must match. */
  labels?: Record<string, string>;
  parentRunId?: string;
  pageSize: number;
  /** Opaque cursor from a previous page. */
  cursor?: string | null;
}
