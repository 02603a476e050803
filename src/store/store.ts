import type { JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../journal/run.js';

/**
 * The seam between the engine and a database. Methods are noun-verb and take one params object.
 * Every write that a lease holder makes is fenced: it carries the lease's `epoch`, and a store
 * rejects it with LeaseLostError (never retried) when the run's epoch moved on. Writes that need no
 * lease (starting a run, resolving a suspension from outside) lock the run row instead, so `seq`
 * stays dense and ordered. `test/conformance/` runs one suite against every implementation.
 */
export interface JournalStore {
  /** Creates a PENDING run, or returns the existing run for a repeated (namespace, idempotencyKey). */
  runCreate(params: RunCreateParams): Promise<{ run: Run; created: boolean; lease: Lease | null }>;
  /** Fail-closed addressing: an unknown id or one in another namespace throws RunNotFoundError. */
  runGet(params: { runId: string; namespace: string }): Promise<Run>;
  runList(params: RunListParams): Promise<{ runs: Run[]; nextCursor: string | null }>;

  /**
   * Takes the lease on one run if it is free or expired (database clock), bumping the epoch, and
   * commits before returning, so the caller reads the journal only after the bump is durable.
   * With `statuses`, only a run in one of them is taken (default: PENDING or RUNNING with expired lease).
   * Returns null when someone else holds it.
   */
  runLeaseAcquire(params: { runId: string; holder: string; ttlMs: number; statuses?: RunStatus[] }): Promise<Lease | null>;
  /** Extends the lease; throws LeaseLostError when the epoch moved on. */
  runLeaseRenew(params: { lease: Lease; ttlMs: number }): Promise<Lease>;
  /** Gives the lease up without changing the status (the run stays claimable if PENDING). */
  runLeaseRelease(params: { lease: Lease }): Promise<void>;
  /**
   * Claims up to `limit` PENDING runs (oldest first) with FOR UPDATE SKIP LOCKED: sets them RUNNING
   * under a new lease. Two claimers never get the same run.
   */
  runClaim(params: { holder: string; ttlMs: number; limit: number; namespace?: string }): Promise<Lease[]>;
  /**
   * Fenced status change. Appends a `status` journal entry (the event) in the same transaction.
   * Terminal and SUSPENDED statuses release the lease. A move to SUSPENDED becomes PENDING instead
   * when a resolution arrived for an open suspension after the run read its journal (no lost wake-up).
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
  /** Entries with seq > afterSeq (afterSeq -1 = from the start), in seq order. */
  journalList(params: { runId: string; afterSeq?: number; limit?: number }): Promise<JournalEntry[]>;
  /**
   * Appends a resolution of the suspension at `suspensionSeq` without a lease, under the run-row lock:
   * - a repeated `dedupeKey` on the same run returns the first entry with `duplicate: true` and writes nothing;
   * - the first resolution of a suspension is `resolved` (applied); later ones are `noop` (already resolved);
   * - a SUSPENDED run with an applied resolution becomes PENDING (claimable).
   * The caller validates the payload against the suspension's pinned schema before calling.
   * Throws RunNotFoundError, or RunStateError when `suspensionSeq` is not an open-or-closed suspension.
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
   */
  runRecoverExpired(params: {
    limit: number;
    maxRecoveries: number;
    graceMs: number;
    failError: RunError;
  }): Promise<{ recovered: string[]; failed: string[] }>;
  /** Open suspensions whose `deadlineAt` (payload.deadlineAt, ISO) passed, oldest first. */
  suspensionListDue(params: { limit: number; kinds?: string[] }): Promise<JournalEntry[]>;

  /**
   * Wake-ups. `onRun` fires for a run when its journal or status changed (a hint; catch up with
   * journalList from your own cursor). `onPending` fires when some run became claimable.
   * LISTEN is re-established after a connection drop, and a wake-up is delivered on reconnect so
   * callers catch up. Returns an unsubscribe function.
   */
  wakeupSubscribe(params: { runId?: string; onRun?: (runId: string) => void; onPending?: () => void }): Promise<() => Promise<void>>;

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
