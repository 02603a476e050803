// runtime/: signals: delivered to the oldest open wait of their name or buffered in the run's inbox,
// and taken by a wait before it parks. Must not order signals itself: arrival order is the store's.
import type { Logger } from 'pino';
import { StoreUnavailableError } from '../../journal/errors.js';
import { newEntry, type JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Lease } from '../../journal/run.js';
import type { BufferedSignal, JournalStore, RunLeaseAcquireRunningResult } from '../../store/store.js';
import { assertJsonStorable } from '../../store/write-checks.js';
import { toJson } from '../replay/content-key.js';
import { InvalidResolutionError } from '../errors.js';
import { validatePinned } from '../replay/payload-schema.js';
import { pinnedOf, type ResolutionPayload } from './suspension.js';

/*
 * Signals, with an inbox (docs/journal.md "Signals"). A signal goes to the oldest open wait of its
 * name; when the run has none (it has not reached its ctx.signal yet, or it is between two waits
 * of a loop), the store buffers it, as Temporal does. A wait that starts takes the earliest
 * buffered signal of its name before it parks, and journals it as its resolution, so replay sees
 * an ordinary suspended + resolved pair. The store keeps arrival order: while signals of a name
 * are buffered, new ones queue behind them even if a wait is open, and the wait drains the queue.
 */

export interface SignalSendParams {
  runId: string;
  namespace: string;
  name: string;
  payload: Json;
  /** Caller-chosen; the same id delivered twice is applied once. */
  signalId: string;
  /** Take the run's lease for this holder with the delivery when it makes the run runnable (SignalDeliverParams.leaseFor). */
  leaseFor?: { holder: string; ttlMs: number };
}

export interface SignalSendResult {
  /** The run the signal was sent to. */
  runId: string;
  /** This delivery closed a wait (not a duplicate, not buffered), so the run can continue: whoever received it may execute it now. */
  runnable: boolean;
  /** This delivery closed a wait (for a duplicate: the first delivery did). */
  applied: boolean;
  /** The same signal id was delivered before; nothing was written, the first delivery's outcome is returned. */
  duplicate: boolean;
  /** Kept in the run's inbox: the next ctx.signal of that name receives it. */
  buffered: boolean;
  /** `already_resolved` when the (first) delivery was journaled as a no-op: the wait it reached refused it. */
  reason: 'already_resolved' | null;
  /** The journal entry recording the delivery; null while the signal is buffered. */
  entry: JournalEntry | null;
  /** The resolution that closed the wait the delivery reached; null while buffered. */
  winner: JournalEntry | null;
  /** With `leaseFor`: the lease taken with the delivery (the caller must execute the run or release it). */
  taken?: RunLeaseAcquireRunningResult | null;
}

/** Rounds of "a wait opened or closed since it was looked up" before giving up (never seen). */
const MAX_ATTEMPTS = 8;

/**
 * Delivers a signal: resolves the oldest open wait of its name (validated against the schema pinned
 * in it: InvalidResolutionError, nothing written), or buffers it. A repeated signal id gets the first
 * delivery's outcome. RunStateError for a finished run.
 */
export async function signalSend(store: JournalStore, params: SignalSendParams, guess: JournalEntry | null = null): Promise<SignalSendResult> {
  const payload = toJson(params.payload, `signal "${params.name}" payload`);
  // Checked once, on the largest form it is ever stored in (the resolution a wait makes of it once
  // buffered), against the request field: nothing accepted here can overflow when a wait takes it.
  assertJsonStorable('payload', signalResolution(payload, params.signalId, true) as Json, store.limits.payloadBytes);
  const dedupeKey = `signal:${params.signalId}`;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    // Only the wait it would reach, never the whole journal (a long run has thousands of entries).
    // A repeated signal id needs no read here: signalDeliver answers `duplicate` before anything else.
    // `guess`: the wait this replica saw the run park on (runtime/resume-cache.ts), tried first without a
    // read. signalDeliver checks any target under the run's lock: a wrong guess answers `wait_open`
    // (then the read below), or buffers the signal exactly as no target would when no wait is open.
    const open = attempt === 0 && guess !== null && guess.runId === params.runId ? guess
      : await store.suspensionOpenOldest({ runId: params.runId, namespace: params.namespace, kind: 'signal', name: params.name });
    // An invalid payload is refused only if it would resolve that wait now; the store decides (it
    // may still buffer it behind queued signals, or answer a duplicate), so ask it without a target.
    const violations = open ? validatePinned(pinnedOf(open), payload) : [];
    const resolution = signalResolution(payload, params.signalId, false);
    const target = open && violations.length === 0
      ? { seq: open.seq, entry: newEntry({ kind: 'signal', name: params.name, status: 'resolved', payload: resolution as Json }) }
      : null;
    const r = await store.signalDeliver({ ...params, dedupeKey, payload, target });
    const runId = params.runId;
    switch (r.outcome) {
      case 'resolved':
        return {
          runId, runnable: true, applied: true, duplicate: false, buffered: false, reason: null, entry: r.entry, winner: r.entry,
          ...(r.taken ? { taken: r.taken } : {}),
        };
      case 'buffered':
        return { runId, runnable: false, applied: false, duplicate: false, buffered: true, reason: null, entry: null, winner: null };
      case 'duplicate':
        if (r.entry === null) return { runId, runnable: false, applied: false, duplicate: true, buffered: true, reason: null, entry: null, winner: null };
        return {
          runId, runnable: false, applied: r.entry.status === 'resolved', duplicate: true, buffered: false,
          reason: r.entry.status === 'resolved' ? null : 'already_resolved', entry: r.entry, winner: r.winner,
        };
      case 'wait_open':
        if (open && r.seq === open.seq) throw new InvalidResolutionError(params.runId, open.seq, violations);
        continue; // a wait opened or closed since it was looked up: look again
    }
  }
  throw new StoreUnavailableError(`run ${params.runId} kept opening and closing waits for signal "${params.name}" while it was delivered`);
}

/** The payload of the resolution entry a signal becomes: delivered to an open wait, or taken from the inbox. */
function signalResolution(value: Json, signalId: string, buffered: boolean): ResolutionPayload {
  return buffered ? { source: 'signal', value, signalId, buffered: true } : { source: 'signal', value, signalId };
}

/**
 * Before a `signal` wait parks (live executions only): hands it the earliest buffered signal of its
 * name. One that fails the wait's pinned schema is journaled as a no-op (refused, kept for the
 * audit trail) and the next is tried. Returns the entry that resolves the wait (this one, or the
 * winner another resolver wrote first, e.g. a deadline), or null when nothing is buffered.
 */
export async function signalInboxTake(params: {
  store: JournalStore; lease: () => Lease; suspension: JournalEntry; logger: Logger;
}): Promise<JournalEntry | null> {
  const { store, suspension } = params;
  for (;;) {
    const [next]: BufferedSignal[] = await store.signalInboxList({ runId: suspension.runId, name: suspension.name, limit: 1 });
    if (!next) return null;
    const violations = validatePinned(pinnedOf(suspension), next.payload);
    const resolution = signalResolution(next.payload, next.signalId, true);
    const { entry, winner } = await store.signalInboxConsume({
      lease: params.lease(), signalId: next.signalId, suspensionSeq: suspension.seq, valid: violations.length === 0,
      entry: newEntry({
        kind: 'signal', name: suspension.name, status: 'resolved', payload: resolution as Json, dedupeKey: `signal:${next.signalId}`,
        scope: suspension.scope,
      }),
    });
    if (winner) return winner;
    if (entry) {
      params.logger.warn({ runId: suspension.runId, seq: suspension.seq, signalId: next.signalId, violations },
        'a buffered signal fails the schema of the wait that reached it; journaled as a no-op');
    }
  }
}
