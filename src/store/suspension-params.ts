import type { EntryKind, JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, RunStatus } from '../journal/run.js';
import type { RunLeaseAcquireRunningResult, RunRouting } from './run-params.js';

/*
 * Parameters and results of the JournalStore's suspension and signal-inbox methods (SignalOps, at
 * the end of this file, says what each does).
 */

export interface SuspensionListParams {
  namespace: string;
  /** Entry kinds (`approval`, `signal`, …); empty or absent: every kind. */
  kinds?: string[];
  /** True: open waits only; false: the others; absent: both. */
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

export interface SuspensionListResult {
  items: SuspensionListItem[];
  /** Null on the last page. */
  nextCursor: string | null;
}

export interface SuspensionOpenOldestParams {
  runId: string;
  namespace?: string;
  kind: EntryKind;
  name: string;
}

/** A signal kept for a run that was not waiting for it yet. */
export interface BufferedSignal {
  runId: string;
  name: string;
  signalId: string;
  payload: Json;
  createdAt: Date;
}

export interface SignalDeliverParams {
  runId: string;
  namespace?: string;
  name: string;
  signalId: string;
  /** The journal dedupe key the signal's resolution carries (`signal:<signalId>`). */
  dedupeKey: string;
  payload: Json;
  /** The open wait the caller validated `payload` against, and the resolution to append; null when it saw none. */
  target: { seq: number; entry: NewJournalEntry } | null;
  /**
   * When the delivery resolves the wait of a SUSPENDED run (so it becomes runnable), take the run's
   * lease for `holder` in the same atomic step and journal its RUNNING entry after the resolution,
   * as runLeaseAcquireRunning would at once: the caller executes the run, and no other replica's
   * executor is woken to race it for the claim. Absent: the run becomes PENDING as before.
   */
  leaseFor?: { holder: string; ttlMs: number; routing?: RunRouting };
}

export type SignalDeliverResult =
  /** Appended as the winning resolution of the open wait the caller targeted. */
  | { outcome: 'resolved'; entry: JournalEntry; /** With `leaseFor`, the lease taken (null: the run was RUNNING, so it was flagged instead, or `routing` sends it to another replica's claim). */ taken?: RunLeaseAcquireRunningResult | null }
  /** Kept in the inbox for the next wait of that name. */
  | { outcome: 'buffered'; signal: BufferedSignal }
  /** Delivered before: the journal entry that recorded it (and its wait's winner), or the signal still buffered. */
  | { outcome: 'duplicate'; entry: JournalEntry | null; winner: JournalEntry | null; signal: BufferedSignal | null }
  /** An open wait of that name exists that the caller did not target: validate against it and call again. */
  | { outcome: 'wait_open'; seq: number };

export interface SignalInboxListParams {
  runId: string;
  namespace?: string;
  /** Only signals of this name. */
  name?: string;
  limit?: number;
}

export interface SignalInboxConsumeParams {
  lease: Lease;
  signalId: string;
  /** The wait the buffered signal resolves. */
  suspensionSeq: number;
  /** The resolution; the store sets its status and refSeq. */
  entry: NewJournalEntry;
  /** The payload passed the wait's pinned schema (`resolved`); false records it as `noop`. */
  valid: boolean;
}

export interface SignalInboxConsumeResult {
  /** The entry written, or null when nothing was (the wait had a winner, or the signal is gone). */
  entry: JournalEntry | null;
  /** The wait's winner: this entry when valid, the earlier winner when it had one; null when this one was a noop or the signal is gone. */
  winner: JournalEntry | null;
}

/**
 * Open suspensions across runs and the signal inbox. Part of JournalStore (store.ts), whose
 * contract holds for each method.
 */
export interface SignalOps {
  /**
   * Suspensions across runs, oldest first (entry createdAt, then run id, then seq): what
   * ListApprovals reads. `open: true` keeps waits with no winning resolution, not superseded by an
   * invalidation, in runs that have not ended; `open: false` keeps the others; absent keeps both.
   * A malformed `runId` matches nothing. `nextCursor` is null on the last page.
   */
  suspensionList(params: SuspensionListParams): Promise<SuspensionListResult>;
  /**
   * The oldest open suspension of one run with this `kind` and `name` (lowest seq), or null: what
   * SendSignal validates a payload against and aims at, without reading the run's journal. "Open"
   * is signalDeliver's definition: a `suspended` entry that no `resolved` (winning) and no
   * `cancelled` (invalidation, run cancelled) entry points at; `noop` resolutions do not close it,
   * its scope does not matter, and the run's status is not looked at. Its cost does not grow with
   * the journal. Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null>;
  /**
   * The signal inbox (docs/journal.md "Signals"). Serialised with the run's other writes, in this order:
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
  signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult>;
  /** Buffered signals of a run (of one name when given), in arrival order. RunNotFoundError as journalList. */
  signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]>;
  /**
   * Fenced: moves buffered signal `signalId` into the journal as a resolution of the wait at
   * `suspensionSeq`: `resolved` when `valid` (the caller checked the wait's pinned schema),
   * `noop` when not (refused, kept for the audit trail and so its id stays delivered). The signal
   * leaves the inbox atomically with the write. When the wait already has a winner nothing is
   * written and the signal stays buffered for a later wait; `winner` is returned. Both null when
   * the signal is gone. Unlike journalResolve it does not flag the run: the holder reads the entry
   * it just wrote.
   */
  signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult>;
}
