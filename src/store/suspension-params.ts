import type { EntryKind, JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, RunStatus } from '../journal/run.js';
import type { RunLeaseAcquireRunningResult } from './run-params.js';

/*
 * Parameters and results of the JournalStore's suspension and signal-inbox methods (store.ts says
 * what each does).
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
  leaseFor?: { holder: string; ttlMs: number };
}

export type SignalDeliverResult =
  /** Appended as the winning resolution of the open wait the caller targeted. */
  | { outcome: 'resolved'; entry: JournalEntry; /** With `leaseFor`, the lease taken (null: the run was RUNNING, so it was flagged instead). */ taken?: RunLeaseAcquireRunningResult | null }
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
