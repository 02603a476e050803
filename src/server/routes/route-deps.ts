import type { Logger } from 'pino';
import type { ReplicaEngine } from '../../engine/index.js';
import type { Limits } from '../../journal/limits.js';
import type { StreamTokens } from '../../engine/index.js';
import type { StreamGate } from '../transport/stream-limit.js';

/** What the routes of the Waymark API delegate to (register-routes.ts); the composition root builds it. */
export interface RouteDeps {
  /** Every route's use case, one call each: runs, journals, streams, signals, approvals, provenance. */
  api: ReplicaEngine;
  logger: Logger;
  /** Payload limit checked before anything is written (the transport enforces the request size). */
  limits: Limits;
  /** The namespace of a request that names none (WAYMARK_NAMESPACE, "default"). */
  defaultNamespace: string;
  /** The per-replica event stream limit. */
  streams: StreamGate;
  /** Mints CreateStreamToken's tokens; null when no WAYMARK_STREAM_TOKEN_SECRET is set (then it is FAILED_PRECONDITION). */
  streamTokens?: StreamTokens | null;
}
