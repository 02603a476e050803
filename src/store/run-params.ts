import type { JournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../journal/run.js';
import type { SweeperLease } from './sweeper-params.js';

/*
 * Parameters and results of the JournalStore's run methods (store.ts says what each method does).
 * One named type per method, as River's driver interface has, so an implementation, a wrapper
 * and the conformance suite all name the same shapes.
 */

export interface RunCreateParams {
  namespace: string;
  workflowName: string;
  workflowVersion: string;
  workflowDigest: string;
  input: Json;
  labels?: Record<string, string>;
  idempotencyKey?: string | null;
  parentRunId?: string | null;
  parentSeq?: number | null;
  budgetUsd?: number | null;
  dryRun?: boolean;
  /**
   * The run timeout (docs/workflows.md "Timeouts"): the run's `deadlineAt` is its creation time on
   * the store's clock plus this many milliseconds, fixed for its life. Absent or null: no deadline.
   */
  timeoutMs?: number | null;
  /**
   * Take the lease at creation (status RUNNING) so the receiving replica executes it with no queue
   * hop (StartRun with wait). Absent: the run is PENDING for the first executor to claim.
   */
  leaseFor?: { holder: string; ttlMs: number; recordRunning?: boolean };
}

export interface RunCreateResult {
  run: Run;
  /** False when the idempotency key returned an existing run. */
  created: boolean;
  /** The new run's lease when `leaseFor` was given and the run was created; otherwise null. */
  lease: Lease | null;
}

export interface RunGetParams {
  runId: string;
  namespace: string;
}

export interface RunListParams {
  namespace: string;
  statuses?: RunStatus[];
  workflowName?: string;
  /** Every label given must match. */
  labels?: Record<string, string>;
  parentRunId?: string;
  pageSize: number;
  /** Opaque cursor from a previous page. */
  cursor?: string | null;
}

export interface RunListResult {
  runs: Run[];
  /** Null on the last page. */
  nextCursor: string | null;
}

export interface RunLeaseAcquireParams {
  runId: string;
  holder: string;
  ttlMs: number;
  /** Only a run in one of these is taken. Default: PENDING, or RUNNING with an expired lease. */
  statuses?: RunStatus[];
  namespace?: string;
}

/** What runLeaseAcquireRunning took: the lease, the run as it left it (RUNNING) and the RUNNING `status` entry it journaled. */
export interface RunLeaseAcquireRunningResult {
  lease: Lease;
  run: Run;
  entry: JournalEntry;
}

export interface RunLeaseRenewParams {
  lease: Lease;
  ttlMs: number;
}

export interface RunLeaseReleaseParams {
  lease: Lease;
}

export interface RunClaimParams {
  holder: string;
  ttlMs: number;
  limit: number;
  namespace?: string;
  /**
   * Routing: the definitions the claimer serves. A run is claimed when one has its workflow name
   * and digest, or its name while no live replica serves its digest (the engine then applies the
   * workflow's drift policy). Absent: any run (tests, and an embedding with one registry).
   */
  serves?: readonly { name: string; digest: string }[];
  /**
   * Routing of declarative flows: with `serves`, also claim runs whose workflow is a flow
   * registered in the run's namespace (flows live in the store, so every replica serves them).
   */
  flows?: boolean;
}

export interface RunStatusSetParams {
  lease: Lease;
  status: RunStatus;
  /** Kept only for a terminal status. */
  output?: Json;
  /** Kept only for a terminal status. */
  error?: RunError;
}

/** The run as the status change left it, and the `status` entry that recorded it. */
export interface RunStatusSetResult {
  run: Run;
  entry: JournalEntry;
}

export interface RunStatusForceParams {
  runId: string;
  namespace?: string;
  status: RunStatus;
  output?: Json;
  error?: RunError;
  /** The sweeper's fence: SweeperLeaseLostError, writing nothing, unless this is the current leader lease. */
  leader?: SweeperLease;
}

/** As RunStatusSetResult; runStatusForce returns null instead when the run had already ended. */
export type RunStatusForceResult = RunStatusSetResult;

/** Runs in each status, every status present (0 when none). */
export type RunCountByStatusResult = Record<RunStatus, number>;
