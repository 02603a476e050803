import type { Limits } from '../journal/limits.js';
import type { ApiKeyOps } from './api-key-params.js';
import type { FlowOps } from './flow-params.js';
import type { JournalOps } from './journal-params.js';
import type { McpServerOps } from './mcp-server-params.js';
import type { ModelDeltaOps } from './model-delta-params.js';
import type { RemoteTaskOps } from './remote-task-params.js';
import type { ReplicaOps } from './replica-params.js';
import type { RetentionOps } from './retention-params.js';
import type { RunOps } from './run-params.js';
import type { ScheduleOps } from './schedule-params.js';
import type { SignalOps } from './suspension-params.js';
import type { SweeperOps } from './sweeper-params.js';
import type { WebhookOps } from './webhook-params.js';

export type * from './api-key-params.js';
export type * from './flow-params.js';
export type * from './remote-task-params.js';
export type * from './journal-params.js';
export type * from './mcp-server-params.js';
export type * from './model-delta-params.js';
export type * from './replica-params.js';
export type * from './retention-params.js';
export type * from './run-params.js';
export type * from './schedule-params.js';
export type * from './suspension-params.js';
export type * from './sweeper-params.js';
export type * from './webhook-params.js';

/**
 * The seam between the engine and a database. Methods are noun-verb and take one params object
 * (`<method>Params`) and return a domain type or a named `<method>Result`, as River's driver
 * interface does. Every write that a lease holder makes is fenced: it carries the lease's `epoch`,
 * and a store rejects it with LeaseLostError (never retried) when the run's epoch moved on or the
 * lease was released (runLeaseRelease, or a terminal, SUSPENDED or PENDING status). The lease's
 * expiry is not checked at write time: an expired lease nobody took over still owns the run (the
 * epoch is the fence, as Temporal's shard range_id is), so a slow renewal costs nothing unless a
 * takeover really happened. Writes that need no lease (starting a run, resolving a suspension from
 * outside) are serialised per run instead, so `seq` stays dense and ordered. Times that decide
 * anything (lease expiry, deadlines, grace periods) are the store's clock, never the caller's.
 * `test/conformance/` runs one suite against every implementation.
 *
 * The methods are grouped by area, one interface each beside its params and results
 * (`<area>-params.ts`), as the Postgres store implements them in `postgres/<area>-ops.ts`.
 */
export interface JournalStore
  extends RunOps, JournalOps, SweeperOps, SignalOps, ReplicaOps, WebhookOps, ApiKeyOps, FlowOps, RemoteTaskOps, McpServerOps, RetentionOps, ModelDeltaOps, ScheduleOps {
  /**
   * The limits this store enforces on every write (DESIGN "Limits"). The engine checks the entries
   * it builds from a request against them before anything is accepted, so a refusal names the
   * request field and nothing accepted can overflow later (a buffered signal's resolution).
   */
  readonly limits: Limits;
  /** The store's clock; leases and deadlines use it, never the worker's. */
  clockNow(): Promise<Date>;
  close(): Promise<void>;
}
