import { ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { StreamRunEventsRequest, StreamRunEventsResponseSchema } from '../../gen/waymark/v1/run_service_pb.js';
import { deltaEventOf, eventOf } from '../convert/convert-journal.js';
import type { FollowItem } from '../../engine/index.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { RouteDeps } from './route-deps.js';
import { RequestCheck } from '../convert/request-validation.js';
import { callerKey, tokenExpiredError } from '../auth/auth.js';
import { abortable, streamSignal } from '../transport/shutdown-signal.js';

/*
 * StreamRunEvents: the engine's stream of the run's journal (engine/read/run-events.ts: history
 * after `after_seq`, then live entries from any replica, ending after the event that settles the
 * run), sent as events. The transport's part: a stream slot (WAYMARK_MAX_STREAMS) taken before
 * anything is read and given back however the stream ends, and the way it ends: shutdown and
 * client cancels end it with their own status (UNAVAILABLE, CANCELLED), never OK, and so does a
 * stream token's expiry (UNAUTHENTICATED, TOKEN_EXPIRED).
 */

export async function* streamRunEvents(
  deps: RouteDeps, req: StreamRunEventsRequest, ctx: HandlerContext,
): AsyncGenerator<MessageInitShape<typeof StreamRunEventsResponseSchema>> {
  const check = new RequestCheck(deps.defaultNamespace);
  const namespace = check.namespace(req.namespace);
  const runId = check.runId('run_id', req.runId);
  const afterSeq = check.afterSeq('after_seq', req.afterSeq);
  const afterOffset = check.afterOffset('after_delta_offset', req.afterDeltaOffset);
  check.done();
  const release = deps.streams.acquire(ctx.signal);
  try {
    // Opened with a stream token: the stream ends with UNAUTHENTICATED (TOKEN_EXPIRED) when it expires.
    const caller = ctx.values.get(callerKey);
    const signal = streamSignal(ctx, caller.kind === 'stream-token' ? { at: caller.expiresAt, reason: tokenExpiredError } : undefined);
    const params = { runId, namespace, afterSeq, followSuspended: req.followSuspended, signal, largePayloads: req.includeLargePayloads };
    // With include_deltas, model call deltas come woven in (docs/agents.md "Token streams").
    const it: AsyncGenerator<FollowItem, void, undefined> = req.includeDeltas
      ? deps.api.runEventsWithDeltas({ ...params, afterOffset })
      : entriesOnly(deps.api.runEvents(params));
    try {
      for (;;) {
        const next = await abortable(it.next(), signal);
        if (next.done) break;
        const item = next.value;
        yield { event: item.entry ? eventOf(item.entry) : deltaEventOf(item.delta) };
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

async function* entriesOnly(entries: AsyncGenerator<JournalEntry, void, undefined>): AsyncGenerator<FollowItem, void, undefined> {
  try {
    for await (const entry of entries) yield { entry };
  } finally {
    void entries.return(undefined).catch(() => undefined);
  }
}
