import { ConnectError, type HandlerContext } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { StreamRunEventsRequest, StreamRunEventsResponseSchema } from '../../gen/waymark/v1/run_service_pb.js';
import { eventOf } from '../convert/convert-journal.js';
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
  check.done();
  const release = deps.streams.acquire(ctx.signal);
  try {
    // Opened with a stream token: the stream ends with UNAUTHENTICATED (TOKEN_EXPIRED) when it expires.
    const caller = ctx.values.get(callerKey);
    const signal = streamSignal(ctx, caller.kind === 'stream-token' ? { at: caller.expiresAt, reason: tokenExpiredError } : undefined);
    const it = deps.api.runEvents({ runId, namespace, afterSeq, followSuspended: req.followSuspended, signal });
    try {
      for (;;) {
        const next = await abortable(it.next(), signal);
        if (next.done) break;
        yield { event: eventOf(next.value) };
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
