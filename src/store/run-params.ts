import type { DriftPayload, JournalEntry, NewJournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../journal/run.js';
import type { SweeperLease } from './sweeper-params.js';

/*
 * Parameters and results of the JournalStore's run methods (RunOps, at the end of this file, says what each method does).
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
  /**
   * Entries the new run starts with, written in the same transaction as the run at seq 0, 1, …
   * (a fork's copy of its source's journal up to the fork point, docs/forks.md). Suspensions among
   * them get their deadline unless an entry among them resolves or cancels them. Requires
   * `leaseFor` without `recordRunning`; a repeated idempotency key writes none of them.
   */
  journal?: readonly NewJournalEntry[];
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
  /** Only a run this holder may execute is taken, as runClaim routes (absent: any run). */
  routing?: RunRouting;
}

/**
 * Routing of a take (docs/recovery.md "Routing"): the terms runClaim claims on, for a take of one
 * run. A run another replica must execute (it serves the run's pinned digest and this one does not,
 * or only it has the workflow) is left PENDING for that replica's claim, with nothing journaled.
 */
export interface RunRouting {
  /** As RunClaimParams.serves. */
  serves: readonly { name: string; digest: string }[];
  /** As RunClaimParams.flows. */
  flows: boolean;
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

export interface RunDigestSetParams {
  lease: Lease;
  /** What the run now executes on: `drift.to` becomes its workflow digest. */
  drift: DriftPayload['drift'];
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

export interface RunForksParams {
  runId: string;
  namespace: string;
  /** At most this many, newest first. */
  limit: number;
}

/** Runs in each status, every status present (0 when none). */
export type RunCountByStatusResult = Record<RunStatus, number>;

/**
 * Runs and their leases: creating, reading, taking, renewing, releasing, claiming and moving a run
 * between statuses. Part of JournalStore (store.ts), whose contract holds for each method.
 */
export interface RunContinueAsNewParams {
  lease: Lease;
  /** The successor's row: same namespace and workflow; no parent, no lease, no journal. */
  successor: Omit<RunCreateParams, 'leaseFor' | 'journal' | 'parentRunId' | 'parentSeq'>;
}

export interface RunContinueAsNewResult extends RunStatusSetResult {
  successor: Run;
}

export interface RunOps {
  /**
   * Creates a PENDING run (RUNNING with a lease when `leaseFor` is given), or returns the existing
   * run for a repeated (namespace, idempotencyKey) with `created: false` and no lease. A repeated key
   * naming a different workflow throws IdempotencyConflictError. Nothing is journaled, unless
   * `leaseFor.recordRunning`: then the new run's RUNNING status entry (seq 0, what runStatusSet
   * would write) is written atomically with the run, so an execution starting on the new run
   * needs neither that write nor a journal read (the journal is that one entry).
   */
  runCreate(params: RunCreateParams): Promise<RunCreateResult>;
  /** Fail-closed addressing: an unknown id or one in another namespace throws RunNotFoundError. */
  runGet(params: RunGetParams): Promise<Run>;
  /** Newest first (createdAt, then id); `nextCursor` is null on the last page. */
  runList(params: RunListParams): Promise<RunListResult>;
  /**
   * Takes the lease on one run if it is free or expired, bumping the epoch, and makes that durable
   * before returning, so the caller reads the journal only after the bump.
   * With `statuses`, only a run in one of them is taken (default: PENDING or RUNNING with expired lease).
   * The run becomes RUNNING (a run under a lease is executing; a terminal run taken this way, e.g. by
   * ResumeRun, has its output and error cleared). Nothing is journaled: the caller records the
   * RUNNING event with runStatusSet if it wants one.
   * Returns null when someone else holds it or the status does not match; throws RunNotFoundError
   * for an unknown run (or one outside `namespace`, when given).
   */
  runLeaseAcquire(params: RunLeaseAcquireParams): Promise<Lease | null>;
  /**
   * runLeaseAcquire and runStatusSet RUNNING as one atomic step, one commit: takes the lease on the
   * same terms (epoch bumped, durable before returning) and journals the RUNNING `status` entry, so
   * an execution starting on a run it takes this way (a run a signal or decision made runnable,
   * a re-take after parking found a resolution) writes one statement fewer. Null when
   * runLeaseAcquire would return null; RunNotFoundError likewise.
   */
  runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null>;
  /** Extends the lease (even an expired one nobody took over); throws LeaseLostError when fenced. */
  runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease>;
  /**
   * Gives the lease up. A RUNNING run goes back to PENDING so another executor may claim it at once
   * (graceful shutdown); other statuses are unchanged. A release by a fenced holder does nothing.
   */
  runLeaseRelease(params: RunLeaseReleaseParams): Promise<void>;
  /**
   * Claims up to `limit` PENDING runs (oldest first) and sets them RUNNING under a new lease each.
   * Two claimers never get the same run, and neither waits for the runs the other is taking.
   */
  runClaim(params: RunClaimParams): Promise<Lease[]>;
  /**
   * Fenced status change. Appends a `status` journal entry (the event: kind `status`, name and
   * payload.status = the status actually set) atomically with it. Terminal, SUSPENDED and
   * PENDING statuses release the lease; `output`/`error` are kept only for terminal statuses.
   * A move to SUSPENDED becomes PENDING instead when a resolution was applied while the run was
   * RUNNING under this lease (no lost wake-up; at worst one spare replay). Status entries are exempt
   * from the journal entry limit, so a full journal can still be failed.
   */
  runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult>;
  /**
   * Fenced: re-pins the run to `drift.to` and journals the change as a `status` entry named
   * `drift` (DriftPayload), one atomic step, so GetRun shows the digest the run executes on and
   * its journal says when and why it changed. LeaseLostError when fenced.
   */
  runDigestSet(params: RunDigestSetParams): Promise<RunStatusSetResult>;
  /**
   * Fenced, one atomic step (docs/workflows.md "Continue as new"): creates `successor` (PENDING,
   * its idempotency key continueKey(run), labelled CONTINUE_LABELS.from = the run), ends the run
   * under `lease` SUCCEEDED with output `{ continuedAsNew: <successor id> }` and the label
   * CONTINUE_LABELS.as, with its status entry. Both commit or neither: LeaseLostError when fenced
   * (nothing written); a successor that already exists under the key is the one linked.
   */
  runContinueAsNew(params: RunContinueAsNewParams): Promise<RunContinueAsNewResult>;
  /**
   * Unfenced status change for operators and the sweeper (cancel, fail after recovery attempts):
   * serialised with the run's other writes, it bumps the epoch so the current holder (if any) is
   * fenced off, releases the lease, and appends the `status` entry. No-op returning null when the
   * run is already terminal. RUNNING cannot be forced (TypeError): only a lease holder runs a run.
   */
  runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null>;
  /** How many runs are in each status (all namespaces), for the runs-by-status gauge. */
  runCountByStatus(): Promise<RunCountByStatusResult>;
  /**
   * The ids of the runs of `namespace` forked from `runId` (label `waymark.fork_of`, FORK_LABELS),
   * newest first, at most `limit`; an index serves it, never a scan of the namespace.
   */
  runForks(params: RunForksParams): Promise<string[]>;
}
