import { ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { StreamRunEventsRequest, StreamRunEventsResponseSchema } from '../gen/waymark/v1/run_service_pb.js';
import type { JournalEntry } from '../journal/journal-entry.js';
import { isTerminalStatus, type Run, type RunStatus } from '../journal/run.js';
import { journalFollow } from '../store/journal-follow.js';
import type { JournalStore } from '../store/store.js';
import { eventOf, statusOf } from './convert-journal.js';
import type { ApiDeps } from './api-deps.js';
import { RequestCheck } from './request-validation.js';
import { abortable, streamSignal } from './shutdown-signal.js';

/*
 * StreamRunEvents: the run's journal after `after_seq` from Postgres, then live entries as any
 * replica appends them (journalFollow: NOTIFY wakes it, it reads from its own cursor, so nothing is
 * missed or repeated across a reconnect). It ends after the event that settles the run: a terminal
 * status, or (without follow_suspended) the SUSPENDED that parks it. A settling event only ends the
 * stream when it is still the run's latest entry, so history that parked and resumed streams on.
 * Shutdown and client cancels end it with their own status (UNAVAILABLE, CANCELLED), never OK.
 */

function settles(status: RunStatus, followSuspended: boolean): boolean {
  return isTerminalStatus(status) || (status === 'SUSPENDED' && !followSuspended);
}

export async function* streamRunEvents(
  deps: ApiDeps, req: StreamRunEventsRequest, ctx: HandlerContext,
): AsyncGenerator<MessageInitShape<typeof StreamRunEventsResponseSchema>> {
  const check = new RequestCheck(deps.defaultNamespace);
  const namespace = check.namespace(req.namespace);
  const runId = check.runId('run_id', req.runId);
  const afterSeq = check.afterSeq('after_seq', req.afterSeq);
  check.done();
  const release = deps.streams.acquire();
  try {
    const signal = streamSignal(ctx);
    const store = deps.engine.store;
    const run = await abortable(store.runGet({ runId, namespace }), signal);
    if (afterSeq >= run.nextSeq - 1 && settles(run.status, req.followSuspended)) return;
    const it = journalFollow({ store, runId, namespace, afterSeq, signal, pollMs: deps.followPollMs })[Symbol.asyncIterator]();
    try {
      for (;;) {
        const next = await abortable(it.next(), signal);
        if (next.done) break;
        yield { event: eventOf(next.value) };
        if (await endsHere(store, next.value, namespace, req.followSuspended, signal)) return;
      }
    } finally {
      // Not awaited: a read in flight finishes on its own, and the follower unsubscribes after it.
      void it.return(undefined).catch(() => undefined);
    }
    if (signal.aborted) throw ConnectError.from(signal.reason);
  } finally {
    release();
  }
}

/** Whether `entry` settles the run and is still its latest entry. */
async function endsHere(store: JournalStore, entry: JournalEntry, namespace: string, followSuspended: boolean, signal: AbortSignal): Promise<boolean> {
  const status = statusOf(entry)?.status;
  if (status === undefined || !settles(status, followSuspended)) return false;
  const now: Run = await abortable(store.runGet({ runId: entry.runId, namespace }), signal);
  return now.status === status && now.nextSeq - 1 === entry.seq;
}

/**
 * Waits until the run is SUSPENDED or has ended (StartRun with `wait` on a run another call
 * started), following its journal from where it is now; resolves with the run.
 */
export async function waitUntilSettled(deps: ApiDeps, run: Run, signal: AbortSignal): Promise<Run> {
  if (settles(run.status, false)) return run;
  const store = deps.engine.store;
  const it = journalFollow({ store, runId: run.id, namespace: run.namespace, afterSeq: run.nextSeq - 1, signal, pollMs: deps.followPollMs })[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await abortable(it.next(), signal);
      if (next.done) throw ConnectError.from(signal.reason);
      const status = statusOf(next.value)?.status;
      if (status !== undefined && settles(status, false)) return await abortable(store.runGet({ runId: run.id, namespace: run.namespace }), signal);
    }
  } finally {
    void it.return(undefined).catch(() => undefined);
  }
}
