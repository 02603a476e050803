/**
 * Waymark client for browsers (`@waymark-dev/client/browser`): the generated service clients over
 * Connect-Web (fetch; the Connect protocol, which works over HTTP/1.1 and HTTP/2 alike), a bearer
 * token on every call, and StreamRunEvents with reconnects from the last seq. No Node modules:
 * the Node entry's transport, worker and ids use node:http2 and node:crypto. The web console
 * (console/) is built on this.
 */
import { Code, ConnectError, createClient, type Client, type Interceptor, type Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import { followEvents, type ReconnectInfo } from './events.js';
import type { RunEvent } from './gen/waymark/v1/run_pb.js';
import { RunService } from './gen/waymark/v1/run_service_pb.js';
import { SignalService } from './gen/waymark/v1/signal_service_pb.js';
import { FlowService } from './gen/waymark/v1/flow_service_pb.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js';

export { Code, ConnectError } from '@connectrpc/connect';
export { toWaymarkError, WaymarkError } from './errors.js';
export type { ReconnectInfo } from './events.js';
export { approvalStateName, entryStatusName, isTerminal, runStatusName, type RunStatusName } from './names.js';
export * from './gen/waymark/v1/run_pb.js';
export * from './gen/waymark/v1/run_service_pb.js';
export * from './gen/waymark/v1/signal_service_pb.js';
export * from './gen/waymark/v1/flow_service_pb.js';

export interface BrowserClientOptions {
  /** The server's origin, e.g. `location.origin` for a page it serves; default: the page's origin. */
  baseUrl?: string;
  /** An API key (`wmk_…`) or a stream token (`wms_…`), sent as `authorization: Bearer …`. */
  token?: string | (() => string);
  /** The namespace of every call; empty means the key's own (or the server's default). */
  namespace?: string;
  /** Overrides the Connect-Web transport (tests). */
  transport?: Transport;
}

export interface BrowserClients {
  readonly runs: Client<typeof RunService>;
  readonly signals: Client<typeof SignalService>;
  readonly flows: Client<typeof FlowService>;
  readonly namespace: string;
  /**
   * A run's events from `afterSeq` (exclusive), reconnecting with backoff after a dropped stream and
   * resuming after the last seq delivered, so nothing is missed or repeated (docs/clients.md "Event
   * streams"). Ends when the run ends (or parks, unless `followSuspended`).
   */
  events(runId: string, options?: BrowserEventsOptions): AsyncGenerator<RunEvent, void, undefined>;
}

export interface BrowserEventsOptions {
  afterSeq?: bigint;
  followSuspended?: boolean;
  signal?: AbortSignal;
  onReconnect?: (info: ReconnectInfo) => void;
  retry?: Partial<RetryPolicy>;
}

/**
 * fetch reports a refused or broken connection as a TypeError ("Failed to fetch"), which
 * Connect-Web passes on as UNKNOWN; this makes it UNAVAILABLE, as the Node client reports one, so
 * the retry and reconnect rules (docs/clients.md) apply: a stream rides through a server restart.
 */
function networkErrorsUnavailable(): Interceptor {
  const unavailable = (err: unknown): unknown => {
    const cause = err instanceof ConnectError ? err.cause : err;
    if (cause instanceof TypeError && (!(err instanceof ConnectError) || err.code === Code.Unknown || err.code === Code.Internal)) {
      return new ConnectError(`could not reach the server, or the connection broke: ${cause.message}`, Code.Unavailable, undefined, undefined, cause);
    }
    return err;
  };
  return (next) => async (req) => {
    try {
      const res = await next(req);
      if (!res.stream) return res;
      const message = res.message;
      return {
        ...res,
        message: (async function* () {
          try {
            yield* message;
          } catch (err) {
            throw unavailable(err);
          }
        })(),
      };
    } catch (err) {
      throw unavailable(err);
    }
  };
}

export function createBrowserClients(options: BrowserClientOptions = {}): BrowserClients {
  const token = options.token;
  const interceptors: Interceptor[] = [networkErrorsUnavailable()];
  if (token) {
    interceptors.push((next) => (req) => {
      req.header.set('authorization', `Bearer ${typeof token === 'string' ? token : token()}`);
      return next(req);
    });
  }
  const transport = options.transport
    ?? createConnectTransport({ baseUrl: options.baseUrl ?? (globalThis as { location?: { origin: string } }).location?.origin ?? '', interceptors, useBinaryFormat: true });
  const runs = createClient(RunService, transport);
  const namespace = options.namespace ?? '';
  return {
    runs,
    signals: createClient(SignalService, transport),
    flows: createClient(FlowService, transport),
    namespace,
    events: (runId, o = {}) => followEvents({
      runs, namespace, runId, afterSeq: o.afterSeq ?? -1n, followSuspended: o.followSuspended ?? false,
      policy: { ...DEFAULT_RETRY, ...o.retry }, onReconnect: o.onReconnect, signal: o.signal ?? new AbortController().signal,
    }),
  };
}
