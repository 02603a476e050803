import type { EntryKind, JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
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
   * naming a different workflow throws IdempotencyConflictError. Nothing is journaled, unless
   * `leaseFor.recordRunning`: then the new run's RUNNING status entry (seq 0, what runStatusSet
   * would write) goes in with it, in the same statement, so an execution starting on the new run
   * needs neither that commit nor a journal read (the journal is that one entry).
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
    /** The sweeper's fence: SweeperLeaseLostError, writing nothing, unless this is the current leader lease. */
    leader?: SweeperLease;
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
   * Per run id, the sum of `costUsd` over the run's own entries (not its children's): 0 when none
   * has a cost. One read for a page of runs (ListRuns' `spent_usd`). Unknown ids (or ids outside
   * `namespace`) are absent from the map; nothing throws for them.
   */
  journalCostTotals(params: { runIds: string[]; namespace?: string }): Promise<Map<string, number>>;
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
    /** The sweeper's fence (see runStatusForce). */
    leader?: SweeperLease;
  }): Promise<{ entry: JournalEntry; applied: boolean; duplicate: boolean; winner: JournalEntry }>;

  /**
   * Sweeper: RUNNING runs whose lease expired become PENDING (recoveryCount + 1, epoch bumped); a run
   * that already used `maxRecoveries` is FAILED instead with `failError`. A journalAppend resets
   * recoveryCount to 0: a recovery after which the run made progress did not fail, so only
   * `maxRecoveries` recoveries in a row without progress fail a run (DESIGN "3 failed recoveries"). Claims with SKIP LOCKED,
   * so concurrent sweepers never recover one run twice. Ignores runs younger than `graceMs`.
   * A FAILED run gets a `status` entry (its terminal event); a recovery journals nothing. The ids
   * come back in no particular order.
   */
  runRecoverExpired(params: {
    limit: number;
    maxRecoveries: number;
    graceMs: number;
    failError: RunError;
    /** The sweeper's fence (see runStatusForce). */
    leader?: SweeperLease;
  }): Promise<{ recovered: string[]; failed: string[] }>;
  /**
   * Open (unresolved) suspensions whose `deadlineAt` (payload.deadlineAt, ISO) passed on the store's
   * clock, earliest deadline first, in runs that are not terminal. `kinds` filters by entry kind.
   */
  suspensionListDue(params: { limit: number; kinds?: string[] }): Promise<JournalEntry[]>;
  /**
   * Sweeper: ended (terminal) child runs whose parent is not terminal and whose `child` wait at
   * `parentSeq` has no winning resolution yet (the parent missed the wake-up in a crash). Only
   * children that ended at least `graceMs` ago, so the engine's own resolution goes first.
   */
  runListEndedChildren(params: { limit: number; graceMs: number }): Promise<Run[]>;
  /**
   * Sweeper: unfinished child runs whose parent ended at least `graceMs` ago, with the parent's
   * status (a cancelled parent cancels the child; any other end fails it).
   */
  runListOrphans(params: { limit: number; graceMs: number }): Promise<{ run: Run; parentStatus: RunStatus }[]>;
  /** How many runs are in each status (all namespaces), for the runs-by-status gauge. */
  runCountByStatus(): Promise<Record<RunStatus, number>>;

  /**
   * The sweeper leader lease: one row per store, so among several sweepers exactly one acts.
   * Takes it when free or expired (database clock), bumping its epoch; null when another holds it.
   * Sweeper writes carry the lease (`leader`) and are fenced by its epoch under a row lock, so a
   * paused ex-leader's writes commit before a takeover or not at all.
   */
  sweeperLeaseAcquire(params: { holder: string; ttlMs: number }): Promise<SweeperLease | null>;
  /** Extends the leader lease (even an expired one nobody took); SweeperLeaseLostError when fenced. */
  sweeperLeaseRenew(params: { lease: SweeperLease; ttlMs: number }): Promise<SweeperLease>;
  /** Gives leadership up (another sweeper may take it at once); a fenced release does nothing. */
  sweeperLeaseRelease(params: { lease: SweeperLease }): Promise<void>;

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

  /**
   * Suspensions across runs, oldest first (entry createdAt, then run id, then seq): what
   * ListApprovals reads. `open: true` keeps waits with no winning resolution, not superseded by an
   * invalidation, in runs that have not ended; `open: false` keeps the others; absent keeps both.
   * A malformed `runId` matches nothing. `nextCursor` is null on the last page.
   */
  suspensionList(params: SuspensionListParams): Promise<{ items: SuspensionListItem[]; nextCursor: string | null }>;
  /**
   * The oldest open suspension of one run with this `kind` and `name` (lowest seq), or null: what
   * SendSignal validates a payload against and aims at, without reading the run's journal. "Open"
   * is signalDeliver's definition: a `suspended` entry that no `resolved` (winning) and no
   * `cancelled` (invalidation, run cancelled) entry points at; `noop` resolutions do not close it,
   * its scope does not matter, and the run's status is not looked at. A few indexed lookups however
   * long the journal is. Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  suspensionOpenOldest(params: { runId: string; namespace?: string; kind: EntryKind; name: string }): Promise<JournalEntry | null>;

  /**
   * The signal inbox (docs/journal.md "Signals"). Under the run-row lock, in this order:
   * - `dedupeKey` already in the journal, or `signalId` already buffered: `duplicate`, nothing written;
   * - a terminal run: RunStateError;
   * - an open `signal` wait named `name` (no winning or cancelling entry points at it) while no
   *   signal of that name is buffered: if it is `target.seq`, `target.entry` is appended as its
   *   winning resolution (`resolved`; a SUSPENDED run becomes PENDING, a RUNNING one is flagged as
   *   journalResolve does); otherwise `wait_open` with its seq, so the caller validates against it and calls again;
   * - otherwise (no open wait, or earlier signals of that name queued) the signal is `buffered`.
   * The store sets the entry's status, refSeq and dedupeKey. PayloadTooLargeError and
   * UnstorableValueError before anything is read.
   */
  signalDeliver(params: {
    runId: string;
    namespace?: string;
    name: string;
    signalId: string;
    /** The journal dedupe key the signal's resolution carries (`signal:<signalId>`). */
    dedupeKey: string;
    payload: Json;
    /** The open wait the caller validated `payload` against, and the resolution to append; null when it saw none. */
    target: { seq: number; entry: NewJournalEntry } | null;
  }): Promise<SignalDelivery>;
  /** Buffered signals of a run (of one name when given), in arrival order. RunNotFoundError as journalList. */
  signalInboxList(params: { runId: string; namespace?: string; name?: string; limit?: number }): Promise<BufferedSignal[]>;
  /**
   * Fenced: moves buffered signal `signalId` into the journal as a resolution of the wait at
   * `suspensionSeq`: `resolved` when `valid` (the caller checked the wait's pinned schema),
   * `noop` when not (refused, kept for the audit trail and so its id stays delivered). The inbox
   * row is removed with the write. When the wait already has a winner nothing is written and the
   * signal stays buffered for a later wait; `winner` is returned. Both null when the row is gone.
   * Unlike journalResolve it does not flag the run: the holder reads the entry it just wrote.
   */
  signalInboxConsume(params: {
    lease: Lease;
    signalId: string;
    suspensionSeq: number;
    entry: NewJournalEntry;
    valid: boolean;
  }): Promise<{ entry: JournalEntry | null; winner: JournalEntry | null }>;

  /** Database time (ms since epoch); leases and deadlines use it, never the worker's clock. */
  clockNow(): Promise<Date>;
  close(): Promise<void>;
}

/** Proof of being the active sweeper of a store: the fencing epoch its writes carry. */
export interface SweeperLease {
  holder: string;
  epoch: number;
  expiresAt: Date;
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
  leaseFor?: { holder: string; ttlMs: number; recordRunning?: boolean };
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

export interface SuspensionListParams {
  namespace: string;
  /** Entry kinds (`approval`, `signal`, …); empty or absent: every kind. */
  kinds?: string[];
  open?: boolean;
  runId?: string;
  workflowName?: string;
  /** Every label given must match the run's. */
  labels?: Record<string, string>;
  pageSize: number;
  /** Opaque cursor from a previous page. */
  cursor?: string | null;
}

/** One suspension with what decides its state, and the run facts a listing filters and shows. */
export interface SuspensionListItem {
  entry: JournalEntry;
  /** Its winning (`resolved`) resolution, or null. */
  winner: JournalEntry | null;
  /** A `cancelled` entry (an invalidation) points at it: a later attempt replaced it. */
  superseded: boolean;
  run: { id: string; namespace: string; workflowName: string; status: RunStatus; labels: Record<string, string> };
}

/** A signal kept for a run that was not waiting for it yet. */
export interface BufferedSignal {
  runId: string;
  name: string;
  signalId: string;
  payload: Json;
  createdAt: Date;
}

export type SignalDelivery =
  /** Appended as the winning resolution of the open wait the caller targeted. */
  | { outcome: 'resolved'; entry: JournalEntry }
  /** Kept in the inbox for the next wait of that name. */
  | { outcome: 'buffered'; signal: BufferedSignal }
  /** Delivered before: the journal entry that recorded it (and its wait's winner), or the signal still buffered. */
  | { outcome: 'duplicate'; entry: JournalEntry | null; winner: JournalEntry | null; signal: BufferedSignal | null }
  /** An open wait of that name exists that the caller did not target: validate against it and call again. */
  | { outcome: 'wait_open'; seq: number };
