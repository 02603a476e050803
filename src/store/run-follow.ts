import { WaymarkError } from '../journal/errors.js';
import type { JournalEntry } from '../journal/journal-entry.js';
import { FollowWaker } from './follow-waker.js';
import { FOLLOW_DEFAULTS } from './journal-follow.js';
import type { JournalStore, ModelDelta } from './store.js';

/** One item of a followed run: a journal entry, or a model call delta. */
export type FollowItem = { entry: JournalEntry; delta?: undefined } | { delta: ModelDelta; entry?: undefined };

export interface RunFollowParams {
  store: JournalStore;
  runId: string;
  namespace?: string;
  /** Entries with seq > afterSeq. */
  afterSeq: number;
  /** Deltas with offset > afterOffset. */
  afterOffset: number;
  signal: AbortSignal;
  pollMs?: number;
  retryMs?: number;
  batchSize?: number;
  /** Out-of-line payloads as references (the default) or inline (JournalListParams.payloads). */
  payloads?: 'inline' | 'reference';
}

/**
 * journalFollow (journal-follow.ts) with the run's model call deltas woven in (docs/agents.md
 * "Token streams"): every entry after `afterSeq` once in seq order, every delta after `afterOffset`
 * once in offset order, and a delta never before the entry of its call (its `running` entry).
 * Each round reads entries, then deltas: a delta commits after its call's entry, and all of an
 * attempt's deltas commit before the call's result, so a round that reads the result also reads
 * every delta before it, and the merge puts them before the result. A delta whose entry this round
 * has not read, and a full delta batch (more may precede an entry read now), hold back what follows
 * them until the next round, which starts at once. Both cursors only move forward, so a client that
 * resumes with the last seq and offset it saw misses nothing and sees nothing twice.
 */
export async function* runFollow(params: RunFollowParams): AsyncGenerator<FollowItem, void, undefined> {
  const { store, runId, signal } = params;
  const pollMs = params.pollMs ?? FOLLOW_DEFAULTS.safetyMs;
  const retryMs = Math.min(params.retryMs ?? FOLLOW_DEFAULTS.retryMs, pollMs);
  const limit = params.batchSize ?? 500;
  let seq = params.afterSeq;
  let offset = params.afterOffset;
  const waker = new FollowWaker();
  const unsubscribe = await store.wakeupSubscribe({ runId, onRun: waker.onWake, onDelta: waker.onWake, onResync: waker.onWake });
  try {
    while (!signal.aborted) {
      waker.round();
      let again = false;
      let failed = false;
      try {
        const entries = await store.journalList({ runId, afterSeq: seq, limit, namespace: params.namespace, payloads: params.payloads ?? 'reference' });
        const deltas = await store.modelDeltaList({ runId, afterOffset: offset, limit });
        const full = deltas.length === limit;
        // With a full batch, only entries the read deltas need: a later one may have unread deltas before it.
        const entryLimit = full ? Math.max(seq, ...deltas.map((d) => d.entrySeq)) : Infinity;
        again = full || entries.length === limit;
        let d = 0;
        const flushDeltas = function* (below: number): Generator<FollowItem> {
          while (d < deltas.length && deltas[d]!.entrySeq < below && deltas[d]!.entrySeq <= seq) {
            offset = deltas[d]!.offset;
            yield { delta: deltas[d++]! };
          }
        };
        for (const entry of entries) {
          if (entry.seq !== seq + 1 || entry.seq > entryLimit) {
            again = true; // a gap (read again) or an entry held back behind unread deltas
            break;
          }
          yield* flushDeltas(entry.seq);
          if (signal.aborted) return;
          seq = entry.seq;
          yield { entry };
          if (signal.aborted) return;
        }
        yield* flushDeltas(Infinity);
        if (d < deltas.length) again = true; // a delta whose entry is not read yet
      } catch (err) {
        if (!(err instanceof WaymarkError && err.retryable)) throw err;
        failed = true;
      }
      if (!again) await waker.wait(failed ? retryMs : pollMs, signal);
    }
  } finally {
    await unsubscribe();
  }
}
