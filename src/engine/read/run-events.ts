// read/: a run's journal as a stream (StreamRunEvents) and where that stream ends.
// Read-only: must not miss or repeat an entry across a reconnect (it reads from its own cursor).
import type { JournalEntry, StatusPayload } from '../../journal/journal-entry.js';
import { isTerminalStatus, RUN_STATUSES, type Run, type RunStatus } from '../../journal/run.js';
import { journalFollow } from '../../store/journal-follow.js';
import { runFollow, type FollowItem } from '../../store/run-follow.js';
import type { JournalStore } from '../../store/store.js';

/*
 * A run's journal as a stream (StreamRunEvents): the entries after `afterSeq`, then live ones as
 * any replica appends them (journalFollow: a wake-up or the poll makes it read from its own
 * cursor, so nothing is missed or repeated across a reconnect). It ends after the entry that
 * settles the run: a terminal status, or (without followSuspended) the SUSPENDED that parks it. A
 * settling entry only ends it while it is still the run's latest entry, so history that parked
 * and resumed streams on. The caller's signal ends it early; the transport says why.
 */

/** Entries a stream with include_large_payloads reads per batch (a stream by reference reads 500). */
const INLINE_PAYLOAD_BATCH = 16;

/** The new status a `status` entry records, or null for any other entry. */
export function statusOf(entry: JournalEntry): StatusPayload | null {
  if (entry.kind !== 'status' || entry.payload === null || typeof entry.payload !== 'object' || Array.isArray(entry.payload)) return null;
  const payload = entry.payload as unknown as StatusPayload;
  return RUN_STATUSES.includes(payload.status as RunStatus) ? payload : null;
}

function settles(status: RunStatus, followSuspended: boolean): boolean {
  return isTerminalStatus(status) || (status === 'SUSPENDED' && !followSuspended);
}

export interface RunEventsParams {
  store: JournalStore;
  runId: string;
  namespace: string;
  /** Entries with seq > afterSeq; -1 from the start. */
  afterSeq: number;
  /** Stream on through SUSPENDED (ends only at a terminal status). */
  followSuspended: boolean;
  /** Ends the stream (it returns; the caller decides what an abort means). */
  signal: AbortSignal;
  /** Fallback poll when no wake-up arrives. */
  pollMs?: number;
  /** Out-of-line payloads inline instead of as references (StreamRunEvents include_large_payloads). */
  largePayloads?: boolean;
}

/** The run's entries after `afterSeq`, ending after the one that settles it (RunNotFoundError first for an unknown run). */
export function runEvents(params: RunEventsParams): AsyncGenerator<JournalEntry, void, undefined> {
  return untilSettled(params, (p) => journalFollow(p), (entry) => entry);
}

/**
 * runEvents with the run's model call deltas woven in (StreamRunEvents with `include_deltas`,
 * docs/agents.md "Token streams"): deltas after `afterOffset`, each after its call's entry.
 */
export function runEventsWithDeltas(params: RunEventsParams & { afterOffset: number }): AsyncGenerator<FollowItem, void, undefined> {
  return untilSettled(params, (p) => runFollow({ ...p, afterOffset: params.afterOffset }), (item) => item.entry);
}

/** What `follow` yields from `afterSeq` on, ending after the entry that settles the run. */
async function* untilSettled<T>(
  params: RunEventsParams,
  follow: (p: { store: JournalStore; runId: string; namespace: string; afterSeq: number; signal: AbortSignal; pollMs?: number; payloads: 'inline' | 'reference'; batchSize?: number }) => AsyncIterable<T>,
  entryOf: (item: T) => JournalEntry | undefined,
): AsyncGenerator<T, void, undefined> {
  const { store, runId, namespace, signal } = params;
  const run = await store.runGet({ runId, namespace });
  if (params.afterSeq >= run.nextSeq - 1 && settles(run.status, params.followSuspended)) return;
  // Inline large payloads are read a few entries at a time: a batch holds at most
  // INLINE_PAYLOAD_BATCH payloads, each at most the payload limit, not 500 of them.
  const inline = params.largePayloads === true;
  const it = follow({
    store, runId, namespace, afterSeq: params.afterSeq, signal, payloads: inline ? 'inline' : 'reference',
    ...(inline ? { batchSize: INLINE_PAYLOAD_BATCH } : {}), ...(params.pollMs ? { pollMs: params.pollMs } : {}),
  })[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await it.next();
      if (next.done) return;
      yield next.value;
      const entry = entryOf(next.value);
      if (entry && (await endsHere(store, entry, namespace, params.followSuspended))) return;
    }
  } finally {
    // Not awaited: a read in flight finishes on its own, and the follower unsubscribes after it.
    void it.return?.(undefined)?.catch(() => undefined);
  }
}

/** Whether `entry` settles the run and is still its latest entry. */
async function endsHere(store: JournalStore, entry: JournalEntry, namespace: string, followSuspended: boolean): Promise<boolean> {
  const status = statusOf(entry)?.status;
  if (status === undefined || !settles(status, followSuspended)) return false;
  const now: Run = await store.runGet({ runId: entry.runId, namespace });
  return now.status === status && now.nextSeq - 1 === entry.seq;
}

/**
 * Waits until the run is SUSPENDED or has ended (StartRun with `wait` on a run another call
 * started), following its journal from where it is now; resolves with the run. Rejects with the
 * signal's reason once it aborts.
 */
export async function runSettled(params: { store: JournalStore; run: Run; signal: AbortSignal; pollMs?: number }): Promise<Run> {
  const { store, run, signal } = params;
  if (settles(run.status, false)) return run;
  const it = journalFollow({
    store, runId: run.id, namespace: run.namespace, afterSeq: run.nextSeq - 1, signal, ...(params.pollMs ? { pollMs: params.pollMs } : {}),
  })[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await it.next();
      if (next.done) throw signal.reason;
      const status = statusOf(next.value)?.status;
      if (status !== undefined && settles(status, false)) return await store.runGet({ runId: run.id, namespace: run.namespace });
    }
  } finally {
    void it.return(undefined).catch(() => undefined);
  }
}
