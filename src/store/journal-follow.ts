import { WaymarkError } from '../journal/errors.js';
import type { JournalEntry, StatusPayload } from '../journal/journal-entry.js';
import { isTerminalStatus } from '../journal/run.js';
import { FollowWaker } from './follow-waker.js';
import type { JournalStore } from './store.js';

export const FOLLOW_DEFAULTS = {
  /** An idle follower's safety re-check (docs/streaming.md "Idle streams"). */
  safetyMs: 30_000,
  /** A retryable store error is retried this soon, whether or not a wake-up comes. */
  retryMs: 1_000,
} as const;

export interface JournalFollowParams {
  store: JournalStore;
  runId: string;
  /** Yield entries with seq > afterSeq; -1 (the default) replays the whole journal. */
  afterSeq?: number;
  /** Ends the iteration (the iterator returns; it does not throw). */
  signal: AbortSignal;
  /**
   * Safety re-check while idle (FOLLOW_DEFAULTS.safetyMs): wake-ups move a follower, and a lost
   * LISTEN connection resyncs every subscriber when it is back, so this only bounds the damage of
   * a wake-up lost some other way. Idle followers issue no reads between re-checks.
   */
  pollMs?: number;
  /** How soon a read that failed with a retryable store error is tried again (FOLLOW_DEFAULTS.retryMs). */
  retryMs?: number;
  /** Fail-closed addressing: passed to journalList. */
  namespace?: string;
  /** Stop after yielding a terminal `status` entry (StreamRunEvents ends after the terminal event). */
  stopAfterTerminal?: boolean;
  /** Entries read per journalList call while catching up. */
  batchSize?: number;
  /** Out-of-line payloads as references (the default) or inline (JournalListParams.payloads). */
  payloads?: 'inline' | 'reference';
}

/**
 * Every journal entry of a run after `afterSeq`, in seq order, each exactly once (a payload stored
 * out of line by reference, so a batch stays small: docs/journal.md "Large payloads"): catch up with
 * journalList from our own cursor, then wait for a wake-up (or the slow safety re-check), and repeat.
 * It subscribes before the first read, so a write committed between a read and the wait still
 * wakes it. Seq is dense and assigned under the run-row lock, so entries become visible in seq
 * order; a gap (never seen, but cheap to guard) ends the batch and is read again after the wait.
 * Retryable store errors (StoreUnavailableError) are retried after retryMs; others throw. An idle
 * follower costs a subscription and one timer, no reads: N idle streams cost nothing per tick.
 * Pinned by test/conformance (journal-follow) and test/store/listener.test.ts (LISTEN killed mid-run).
 */
export async function* journalFollow(params: JournalFollowParams): AsyncGenerator<JournalEntry, void, undefined> {
  const { store, runId, signal } = params;
  const pollMs = params.pollMs ?? FOLLOW_DEFAULTS.safetyMs;
  const retryMs = Math.min(params.retryMs ?? FOLLOW_DEFAULTS.retryMs, pollMs);
  const batchSize = params.batchSize ?? 500;
  let cursor = params.afterSeq ?? -1;
  const waker = new FollowWaker();
  const unsubscribe = await store.wakeupSubscribe({ runId, onRun: waker.onWake, onResync: waker.onWake });
  try {
    while (!signal.aborted) {
      waker.round();
      let more = true;
      let failed = false;
      try {
        while (more && !signal.aborted) {
          const entries = await store.journalList({ runId, afterSeq: cursor, limit: batchSize, namespace: params.namespace, payloads: params.payloads ?? 'reference' });
          let contiguous = true;
          for (const entry of entries) {
            if (entry.seq !== cursor + 1) {
              contiguous = false; // a gap: read again after the wait rather than skip past it
              break;
            }
            cursor = entry.seq;
            yield entry;
            if (signal.aborted) return;
            if (params.stopAfterTerminal && isTerminalEntry(entry)) return;
          }
          more = contiguous && entries.length === batchSize;
        }
      } catch (err) {
        if (!(err instanceof WaymarkError && err.retryable)) throw err;
        failed = true;
      }
      await waker.wait(failed ? retryMs : pollMs, signal);
    }
  } finally {
    await unsubscribe();
  }
}

function isTerminalEntry(entry: JournalEntry): boolean {
  if (entry.kind !== 'status' || entry.payload === null || typeof entry.payload !== 'object') return false;
  const status = (entry.payload as unknown as StatusPayload).status;
  return typeof status === 'string' && isTerminalStatus(status);
}
