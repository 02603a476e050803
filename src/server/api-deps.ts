import type { Logger } from 'pino';
import type { Engine } from '../engine/engine.js';
import type { Limits } from '../journal/limits.js';
import type { InlineExecutions } from './inline-executions.js';
import type { StreamGate } from './stream-limit.js';

/** What the RunService and SignalService routes delegate to; the composition root builds it. */
export interface ApiDeps {
  /** Runs, journals, signals and approvals; `engine.store` serves the reads. */
  engine: Engine;
  logger: Logger;
  /** Payload limit checked before anything is written (the transport enforces the request size). */
  limits: Limits;
  /** The namespace of a request that names none (WAYMARK_NAMESPACE, "default"). */
  defaultNamespace: string;
  /** The per-replica event stream limit. */
  streams: StreamGate;
  /** Executes runs on this replica (StartRun with wait; runs a signal or decision made PENDING). */
  inline: InlineExecutions;
  /** Fallback poll of a stream following a run when no NOTIFY arrives. Default 1000 ms. */
  followPollMs?: number;
}
