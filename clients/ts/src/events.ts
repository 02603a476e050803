import { Code, type CallOptions as ConnectCallOptions, type Client } from '@connectrpc/connect';
import { toWaymarkError, WaymarkError } from './errors.js';
import type { RunEvent } from './gen/waymark/v1/run_pb.js';
import type { RunService } from './gen/waymark/v1/run_service_pb.js';
import { backoffMs, isRetryable, sleep, withRetries, type RetryPolicy } from './retry.js';

/*
 * StreamRunEvents with reconnects (docs/clients.md "Event streams"). The give-up clock runs only
 * while the stream has no working connection: it starts when a connection is lost and stops when
 * a reconnect succeeds. A follow stream of a parked run carries nothing (and the server sends its
 * headers with the first message only), so a reconnect also sends one GetRun of the run: its
 * answer proves the server is serving again.
 */

/** What `onReconnect` is told before each reconnect. */
export interface ReconnectInfo {
  /** 1 for the first reconnect since the stream last worked, then 2, 3, ... */
  attempt: number;
  /** What ended the previous connection (typed: Unavailable for a dropped one). */
  error: WaymarkError;
  /** The seq the stream resumes after: the last one it delivered, -1n when none yet. */
  afterSeq: bigint;
  /** How long the client waits before this reconnect, in ms. */
  delayMs: number;
}

export interface FollowSettings {
  runs: Client<typeof RunService>;
  namespace: string;
  runId: string;
  afterSeq: bigint;
  followSuspended: boolean;
  /** Payloads stored out of line sent in the events (include_large_payloads). */
  includeLargePayloads?: boolean;
  /** Also model call deltas (docs/clients.md "Token streams"), resumed after `afterOffset`. */
  includeDeltas?: boolean;
  afterOffset?: bigint;
  policy: RetryPolicy;
  onReconnect: ((info: ReconnectInfo) => void) | undefined;
  signal: AbortSignal;
}

export async function* followEvents(s: FollowSettings): AsyncGenerator<RunEvent, void, undefined> {
  let last = s.afterSeq;
  let lastOffset = s.afterOffset ?? -1n;
  let attempt = 0;
  /** When the stream lost its connection with no success since; undefined while it works. */
  let failingSince: number | undefined;
  const succeeded = (): void => {
    attempt = 0;
    failingSince = undefined;
  };
  for (;;) {
    const stream = new AbortController();
    const stop = (): void => stream.abort(s.signal.reason);
    s.signal.addEventListener('abort', stop);
    const options: ConnectCallOptions = { signal: stream.signal };
    let error: WaymarkError | undefined;
    try {
      s.signal.throwIfAborted();
      if (failingSince !== undefined) {
        // The probe of this reconnect: retried with the same backoff for as long as this stream
        // attempt lives (a slow or restarting server); its failure only leaves the clock running.
        withRetries({ mode: 'safe', policy: s.policy, attemptTimeoutMs: 30_000, signal: stream.signal, retry: true },
          (_, o) => s.runs.getRun({ namespace: s.namespace, runId: s.runId }, o)).then(succeeded, () => undefined);
      }
      const request = {
        namespace: s.namespace, runId: s.runId, afterSeq: last >= 0n ? last : undefined, followSuspended: s.followSuspended,
        includeLargePayloads: s.includeLargePayloads ?? false,
        ...(s.includeDeltas ? { includeDeltas: true, afterDeltaOffset: lastOffset >= 0n ? lastOffset : undefined } : {}),
      };
      for await (const { event } of s.runs.streamRunEvents(request, options)) {
        succeeded();
        if (!event) continue;
        // A delta's seq is its call's entry, already delivered: deltas have their own cursor.
        if (event.body.case === 'modelDelta') {
          if (event.body.value.offset <= lastOffset) continue; // delivered before a reconnect
          lastOffset = event.body.value.offset;
        } else {
          if (event.seq <= last) continue; // delivered before a reconnect
          last = event.seq;
        }
        yield event;
      }
    } catch (err) {
      if (s.signal.aborted) throw s.signal.reason;
      const typed = toWaymarkError(err);
      // A stream the server reset with CANCEL (we cancel only after this catch) is a dropped one.
      if (!isRetryable(typed, 'safe') && !(typed.code === Code.Canceled && typed.reason === '')) throw typed;
      error = typed;
    } finally {
      s.signal.removeEventListener('abort', stop);
      stream.abort();
    }
    // The server ended the stream: the run ended (or parked). It never ends one cleanly otherwise.
    if (!error) return;
    const now = Date.now();
    failingSince ??= now;
    if (now - failingSince >= s.policy.streamGiveUpMs) throw error;
    attempt += 1;
    const delayMs = Math.min(backoffMs(attempt, s.policy, error), Math.max(0, failingSince + s.policy.streamGiveUpMs - now));
    s.onReconnect?.({ attempt, error, afterSeq: last, delayMs });
    await sleep(delayMs, s.signal);
  }
}
