import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createContextKey, type Interceptor } from '@connectrpc/connect';
import { ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from '../../gen/google/rpc/error_details_pb.js';
import { ClientBuffers } from './client-buffers.js';
import { ERROR_DOMAIN } from '../errors/error-mapping.js';

/*
 * Per-client limits (issue 16, "Build"): how many requests a client may make per second, and how
 * many long-lived streams it may hold open, so one client cannot take a replica's whole stream
 * limit or CPU. "Client" is the peer address of the connection until authentication exists
 * (issue 19 switches it to the API key); behind a proxy that does not preserve it, every client
 * is the proxy (docs/api.md "Limits"). A refused call is RESOURCE_EXHAUSTED before its handler runs,
 * so nothing is written. Health checks are never limited: probes must see the truth. A client that
 * holds its limit of unread response bytes (client-buffers.ts) is refused new calls the same way.
 */

export interface ClientLimits {
  /** Requests per second one client may make, on average (WAYMARK_CLIENT_RATE_LIMIT; 0: no limit). */
  ratePerSecond: number;
  /** Requests one client may make at once after being quiet (WAYMARK_CLIENT_RATE_BURST). */
  burst: number;
  /** Server streams (StreamRunEvents, Watch) one client may hold open (WAYMARK_CLIENT_MAX_STREAMS). */
  streams: number;
  /** Response bytes a client may leave unread in server memory (WAYMARK_CLIENT_MAX_BUFFERED_BYTES; client-buffers.ts). */
  bufferedBytes: number;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = { ratePerSecond: 1_000, burst: 2_000, streams: 100, bufferedBytes: 32 * 1024 * 1024 };

/** Who the call is from, as the limits count it; the server sets it per request. */
export const clientKey = createContextKey<string>('unknown', { description: 'waymark client identity' });

const UNLIMITED_SERVICES = new Set(['grpc.health.v1.Health']);

/** How long an idle client's bucket is kept (it would be full again by then anyway). */
const FORGET_AFTER_MS = 60_000;

interface Bucket { tokens: number; at: number }

export function clientLimitsInterceptor(
  limits: ClientLimits, buffers: ClientBuffers = new ClientBuffers(limits.bufferedBytes), now: () => number = () => performance.now(),
): Interceptor {
  const buckets = new Map<string, Bucket>();
  const streams = new Map<string, number>();
  const forget = setInterval(() => {
    const t = now();
    for (const [client, b] of buckets) if (t - b.at > FORGET_AFTER_MS) buckets.delete(client);
  }, FORGET_AFTER_MS).unref();
  void forget;

  /** Takes a token; the ms until one is free when there is none. */
  const take = (client: string): number => {
    const t = now();
    const b = buckets.get(client) ?? { tokens: limits.burst, at: t };
    b.tokens = Math.min(limits.burst, b.tokens + ((t - b.at) * limits.ratePerSecond) / 1000);
    b.at = t;
    buckets.set(client, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1000) / limits.ratePerSecond);
  };

  return (next) => async (req) => {
    if (UNLIMITED_SERVICES.has(req.service.typeName)) return next(req);
    const client = req.contextValues.get(clientKey);
    if (limits.ratePerSecond > 0) {
      const waitMs = take(client);
      if (waitMs > 0) throw rateLimited(client, limits, waitMs);
    }
    if (buffers.full(client)) throw bufferFull(client, buffers);
    if (req.method.methodKind !== 'server_streaming' && req.method.methodKind !== 'bidi_streaming') return next(req);
    const open = streams.get(client) ?? 0;
    if (open >= limits.streams) throw tooManyStreams(client, limits);
    streams.set(client, open + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const left = (streams.get(client) ?? 1) - 1;
      if (left > 0) streams.set(client, left);
      else streams.delete(client);
    };
    // The call's signal aborts when it ends however it ends (done, failed, client gone, shutdown).
    req.signal.addEventListener('abort', release, { once: true });
    try {
      return await next(req);
    } catch (err) {
      release();
      throw err;
    }
  };
}

function rateLimited(client: string, limits: ClientLimits, waitMs: number): ConnectError {
  return new ConnectError(
    `too many requests from ${client}: at most ${limits.ratePerSecond} per second (bursts of ${limits.burst}) per client; retry in ${waitMs} ms`,
    Code.ResourceExhausted, undefined, [
      { desc: ErrorInfoSchema, value: { reason: 'RATE_LIMITED', domain: ERROR_DOMAIN, metadata: { client, limit: 'WAYMARK_CLIENT_RATE_LIMIT', rate_per_second: String(limits.ratePerSecond), burst: String(limits.burst) } } },
      { desc: QuotaFailureSchema, value: { violations: [{ subject: `client:${client}`, description: `${limits.ratePerSecond} requests per second per client (WAYMARK_CLIENT_RATE_LIMIT)` }] } },
      { desc: RetryInfoSchema, value: { retryDelay: durationFromMs(waitMs) } },
    ],
  );
}

function tooManyStreams(client: string, limits: ClientLimits): ConnectError {
  return new ConnectError(
    `${client} already holds ${limits.streams} open streams on this replica, the per-client limit (WAYMARK_CLIENT_MAX_STREAMS); close one or retry shortly`,
    Code.ResourceExhausted, undefined, [
      { desc: ErrorInfoSchema, value: { reason: 'CLIENT_STREAM_LIMIT', domain: ERROR_DOMAIN, metadata: { client, limit: 'WAYMARK_CLIENT_MAX_STREAMS', limit_streams: String(limits.streams) } } },
      { desc: QuotaFailureSchema, value: { violations: [{ subject: `client:${client}`, description: `at most ${limits.streams} open streams per client on a replica (WAYMARK_CLIENT_MAX_STREAMS)` }] } },
      { desc: RetryInfoSchema, value: { retryDelay: durationFromMs(1_000) } },
    ],
  );
}

function bufferFull(client: string, buffers: ClientBuffers): ConnectError {
  const limit = buffers.limitBytes;
  return new ConnectError(
    `${client} has ${buffers.queued(client)} bytes of responses it has not read on this replica, its limit (WAYMARK_CLIENT_MAX_BUFFERED_BYTES is ${limit}); read or close its streams, then retry`,
    Code.ResourceExhausted, undefined, [
      { desc: ErrorInfoSchema, value: { reason: 'CLIENT_BUFFER_LIMIT', domain: ERROR_DOMAIN, metadata: { client, limit: 'WAYMARK_CLIENT_MAX_BUFFERED_BYTES', limit_bytes: String(limit), queued_bytes: String(buffers.queued(client)) } } },
      { desc: QuotaFailureSchema, value: { violations: [{ subject: `client:${client}`, description: `at most ${limit} bytes of unread responses per client on a replica (WAYMARK_CLIENT_MAX_BUFFERED_BYTES)` }] } },
      { desc: RetryInfoSchema, value: { retryDelay: durationFromMs(1_000) } },
    ],
  );
}
