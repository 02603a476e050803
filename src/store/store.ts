import type { Limits } from '../journal/limits.js';
import type { JournalEntry } from '../journal/journal-entry.js';
import type { Json, Lease, Run } from '../journal/run.js';
import type { FlowGetParams, FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult } from './flow-params.js';
import type { ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams } from './api-key-params.js';
import type {
  JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalListParams, JournalResolveParams,
  JournalResolveResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams, WakeupSubscribeParams, WakeupUnsubscribe,
} from './journal-params.js';
import type {
  RunClaimParams, RunCountByStatusResult, RunCreateParams, RunCreateResult, RunGetParams, RunLeaseAcquireParams, RunLeaseAcquireRunningResult,
  RunLeaseReleaseParams, RunLeaseRenewParams, RunListParams, RunListResult, RunStatusForceParams, RunStatusForceResult,
  RunStatusSetParams, RunStatusSetResult,
} from './run-params.js';
import type {
  BufferedSignal, SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult,
  SignalInboxListParams, SuspensionListParams, SuspensionListResult, SuspensionOpenOldestParams,
} from './suspension-params.js';
import type {
  OrphanedRun, RunListEndedChildrenParams, RunListOrphansParams, RunListTimedOutParams, RunRecoverDeadSessionsParams, RunRecoverExpiredParams, RunRecoverExpiredResult,
  LeaseSessionParams,
  SuspensionListDueParams, SweeperLease, SweeperLeaseAcquireParams, SweeperLeaseReleaseParams, SweeperLeaseRenewParams,
} from './sweeper-params.js';
import type {
  WebhookClaim, WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams,
  WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams,
  WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams,
} from './webhook-params.js';
import type {
  RemoteTask, RemoteTaskClaimParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams,
  RemoteTaskFence, RemoteTaskListParams, RemoteTaskRetryParams, RemoteToolInfo, RemoteToolListParams, WorkerHeartbeatParams,
} from './remote-task-params.js';

export type * from './api-key-params.js';
export type * from './flow-params.js';
export type * from './remote-task-params.js';
export type * from './journal-params.js';
export type * from './run-params.js';
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
 */
export interface JournalStore {
  /**
   * The limits this store enforces on every write (DESIGN "Limits"). The engine checks the entries
   * it builds from a request against them before anything is accepted, so a refusal names the
   * request field and nothing accepted can overflow later (a buffered signal's resolution).
   */
  readonly limits: Limits;
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
   * Unfenced status change for operators and the sweeper (cancel, fail after recovery attempts):
   * serialised with the run's other writes, it bumps the epoch so the current holder (if any) is
   * fenced off, releases the lease, and appends the `status` entry. No-op returning null when the
   * run is already terminal. RUNNING cannot be forced (TypeError): only a lease holder runs a run.
   */
  runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null>;

  /**
   * Fenced append of one or more entries, all or none, at consecutive seqs, checked against the
   * lease in the same atomic step as the write (a stale holder's append can never land after a new
   * holder read the journal). Throws LeaseLostError when fenced, JournalFullError past the entry
   * limit, PayloadTooLargeError past the payload limit (nothing written).
   */
  journalAppend(params: JournalAppendParams): Promise<JournalEntry[]>;
  /**
   * Entries with seq > afterSeq (afterSeq -1 = from the start), in seq order, at most `limit`
   * (default: all). Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  journalList(params: JournalListParams): Promise<JournalEntry[]>;
  /**
   * Per run id, the sum of `costUsd` over the run's own entries (not its children's): 0 when none
   * has a cost. One read for a page of runs (ListRuns' `spent_usd`). Unknown ids (or ids outside
   * `namespace`) are absent from the map; nothing throws for them.
   */
  journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult>;
  /**
   * The spend of run `runId` and its child runs (recursively, to `maxDepth`) and the reservations
   * of their model calls in flight (docs/agents.md "Budgets"), folded by the store. Its cost grows
   * with the tree's runs and model calls, not with its other entries (issue 22: GetRun and the
   * budget check before each model call). Throws RunNotFoundError for an unknown run (or one
   * outside `namespace`).
   */
  journalSpend(params: JournalSpendParams): Promise<JournalSpendResult>;
  /**
   * The run's `suspended` entries in seq order (or only the one at `seq`), each with every entry
   * that refers to it: its resolutions (`resolved`, `noop`) and cancellations. What GetApproval,
   * DecideApproval and GetRun's waiting_on read instead of the whole journal; its cost grows with
   * the run's waits, not its other entries. Throws RunNotFoundError for an unknown run (or one
   * outside `namespace`).
   */
  journalWaits(params: JournalWaitsParams): Promise<JournalWait[]>;
  /**
   * Appends a resolution of the suspension at `suspensionSeq` without a lease, serialised with the
   * run's other writes:
   * - a repeated `dedupeKey` on the same run returns the first entry with `duplicate: true` and writes nothing;
   * - the first resolution of a suspension is `resolved` (applied); later ones are `noop` (already resolved);
   * - a SUSPENDED run with an applied resolution becomes PENDING (claimable); a RUNNING one is
   *   flagged so its next move to SUSPENDED becomes PENDING instead (see runStatusSet);
   * - the store sets the entry's `status` and `refSeq`; the caller's values for them are ignored.
   * The caller validates the payload against the suspension's pinned schema before calling.
   * Throws RunNotFoundError, RunStateError when `suspensionSeq` is not a suspension or the run is
   * terminal (a duplicate dedupeKey is still answered), PayloadTooLargeError, JournalFullError.
   */
  journalResolve(params: JournalResolveParams): Promise<JournalResolveResult>;

  /**
   * Sweeper: RUNNING runs whose lease expired become PENDING (recoveryCount + 1, epoch bumped); a run
   * that already used `maxRecoveries` is FAILED instead with `failError`. A journalAppend resets
   * recoveryCount to 0: a recovery after which the run made progress did not fail, so only
   * `maxRecoveries` recoveries in a row without progress fail a run (DESIGN "3 failed recoveries").
   * Concurrent sweepers never recover one run twice, and skip runs another is busy with rather
   * than wait. Ignores runs younger than `graceMs`. A FAILED run gets a `status` entry (its
   * terminal event); a recovery journals nothing.
   */
  runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult>;
  /**
   * Holds a session for lease holder `holder` whose end marks its leases dead (docs/recovery.md
   * "Dead sessions"): on PostgreSQL a dedicated connection holding a session advisory lock, which
   * ends with the holder's process. Resolves once registered; a lost session is reopened on its
   * own. Leases of a holder that never opened one only expire. Idempotent per holder.
   */
  leaseSessionOpen(params: LeaseSessionParams): Promise<void>;
  /** Ends `holder`'s session cleanly: its registration goes first, so its leases go back to expiring. */
  leaseSessionClose(params: LeaseSessionParams): Promise<void>;
  /**
   * Sweeper: RUNNING runs whose holder's lease session has ended are recovered exactly as
   * runRecoverExpired recovers expired ones (PENDING, or FAILED after `maxRecoveries`; epoch
   * bumped), whatever their lease's expiry and age. Never takes a run whose holder's session is
   * alive, nor one whose holder never opened a session (test/conformance/lease-sessions.conformance.ts).
   */
  runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult>;
  /**
   * Open (unresolved) suspensions whose `deadlineAt` (payload.deadlineAt, ISO) passed on the store's
   * clock, earliest deadline first, in runs that are not terminal. `kinds` filters by entry kind.
   */
  suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]>;
  /**
   * Sweeper: ended (terminal) child runs whose parent is not terminal and whose `child` wait at
   * `parentSeq` has no winning resolution yet (the parent missed the wake-up in a crash). Only
   * children that ended at least `graceMs` ago, so the engine's own resolution goes first.
   */
  runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]>;
  /**
   * Sweeper: unfinished child runs whose parent ended at least `graceMs` ago, with the parent's
   * status (a cancelled parent cancels the child; any other end fails it).
   */
  runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]>;
  /**
   * Sweeper: unfinished (PENDING, RUNNING, SUSPENDED) runs whose `deadlineAt` passed on the store's
   * clock, earliest deadline first (then id), at most `limit`. Reads only: the sweeper fails each
   * with runStatusForce (docs/recovery.md "Run timeouts").
   */
  runListTimedOut(params: RunListTimedOutParams): Promise<Run[]>;
  /** How many runs are in each status (all namespaces), for the runs-by-status gauge. */
  runCountByStatus(): Promise<RunCountByStatusResult>;

  /**
   * The sweeper leader lease: one per store, so among several sweepers exactly one acts.
   * Takes it when free or expired, bumping its epoch; null when another holds it.
   * Sweeper writes carry the lease (`leader`) and are fenced by its epoch, so a paused
   * ex-leader's writes land before a takeover or not at all.
   */
  sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null>;
  /** Extends the leader lease (even an expired one nobody took); SweeperLeaseLostError when fenced. */
  sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease>;
  /** Gives leadership up (another sweeper may take it at once); a fenced release does nothing. */
  sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void>;

  /**
   * Wake-ups. `onRun` fires for a run when its journal grew (appends, status entries, resolutions)
   * or it became claimable (a hint; catch up with journalList from your own cursor). `onPending`
   * fires when some run became PENDING: created, released, resolved while SUSPENDED, recovered.
   * The subscription outlives a lost connection to the store, and a wake-up is delivered when it
   * is back so callers catch up: `onRun(runId)` for a subscriber filtered to one run, `onPending()`,
   * and `onResync()` (for subscribers that follow every run and so need a full catch-up).
   * Resolves once the subscription is live: anything written afterwards wakes it.
   */
  wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe>;

  /**
   * Suspensions across runs, oldest first (entry createdAt, then run id, then seq): what
   * ListApprovals reads. `open: true` keeps waits with no winning resolution, not superseded by an
   * invalidation, in runs that have not ended; `open: false` keeps the others; absent keeps both.
   * A malformed `runId` matches nothing. `nextCursor` is null on the last page.
   */
  suspensionList(params: SuspensionListParams): Promise<SuspensionListResult>;
  /**
   * The oldest open suspension of one run with this `kind` and `name` (lowest seq), or null: what
   * SendSignal validates a payload against and aims at, without reading the run's journal. "Open"
   * is signalDeliver's definition: a `suspended` entry that no `resolved` (winning) and no
   * `cancelled` (invalidation, run cancelled) entry points at; `noop` resolutions do not close it,
   * its scope does not matter, and the run's status is not looked at. Its cost does not grow with
   * the journal. Throws RunNotFoundError for an unknown run (or one outside `namespace`).
   */
  suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null>;

  /**
   * The signal inbox (docs/journal.md "Signals"). Serialised with the run's other writes, in this order:
   * - `dedupeKey` already in the journal, or `signalId` already buffered: `duplicate`, nothing written;
   * - a terminal run: RunStateError;
   * - an open `signal` wait named `name` (no winning or cancelling entry points at it) while no
   *   signal of that name is buffered: if it is `target.seq`, `target.entry` is appended as its
   *   winning resolution (`resolved`; a SUSPENDED run becomes PENDING, a RUNNING one is flagged as
   *   journalResolve does); otherwise `wait_open` with its seq, so the caller validates against it and calls again;
   * - otherwise (no open wait, or earlier signals of that name queued) the signal is `buffered`.
   * The store sets the entry's status, refSeq and dedupeKey. PayloadTooLargeError and
   * UnstorableValueError before anything is read.
   */
  signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult>;
  /** Buffered signals of a run (of one name when given), in arrival order. RunNotFoundError as journalList. */
  signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]>;
  /**
   * Fenced: moves buffered signal `signalId` into the journal as a resolution of the wait at
   * `suspensionSeq`: `resolved` when `valid` (the caller checked the wait's pinned schema),
   * `noop` when not (refused, kept for the audit trail and so its id stays delivered). The signal
   * leaves the inbox atomically with the write. When the wait already has a winner nothing is
   * written and the signal stays buffered for a later wait; `winner` is returned. Both null when
   * the signal is gone. Unlike journalResolve it does not flag the run: the holder reads the entry
   * it just wrote.
   */
  signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult>;

  /**
   * Serialises budget admission over one run tree (docs/agents.md "Budget admission"): resolves once
   * the caller holds the tree's lock, against every caller on this store in any process. `release`
   * gives it back (idempotent); a holder whose process dies loses it. A wait that cannot be served
   * (the database is gone, or another holder kept it too long) throws StoreUnavailableError.
   */
  /**
   * Records that replica `replicaId` is alive and serves `workflows` until `ttlMs` from now
   * (database clock); a later heartbeat replaces the list. Routing (docs/recovery.md "Routing").
   */
  replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void>;
  /** A clean stop: the replica serves nothing from now on. */
  replicaRemove(params: { replicaId: string }): Promise<void>;
  /** Replicas whose heartbeat has not expired, newest start first. */
  replicaList(): Promise<ReplicaInfo[]>;
  /**
   * PENDING runs, for longer than `olderThanMs`, that no live replica can execute (none serves their
   * workflow under any digest), oldest first: the sweeper reports them.
   */
  runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]>;

  budgetLock(params: BudgetLockParams): Promise<BudgetLock>;

  /**
   * Webhooks (webhook-params.ts; docs/security.md "Webhooks"). Every terminal status written by
   * runStatusSet, runStatusForce or runRecoverExpired also writes, atomically with it, one pending
   * delivery of `run.finished` per endpoint of the run's namespace that takes it: the outbox.
   * An endpoint starts with one secret; ids are the caller's.
   */
  webhookEndpointCreate(params: WebhookEndpointCreateParams): Promise<WebhookEndpoint>;
  /** The namespace's endpoints, oldest first. */
  webhookEndpointList(params: WebhookEndpointListParams): Promise<WebhookEndpoint[]>;
  /** Deletes the endpoint and its deliveries; WebhookEndpointNotFoundError when it is not in the namespace. */
  webhookEndpointDelete(params: WebhookEndpointDeleteParams): Promise<void>;
  /**
   * Makes `secret` the current secret; the secrets signing until now go on signing for
   * `overlapMs` (store clock), expired ones are dropped. WebhookEndpointNotFoundError as delete.
   */
  webhookEndpointRotate(params: WebhookEndpointRotateParams): Promise<WebhookEndpoint>;
  /**
   * Claims up to `limit` due pending deliveries (oldest due first) for one attempt each, counting
   * the attempt; a claim lapses after `claimTtlMs`, so a dispatcher that died mid-attempt leaves
   * the delivery to another. Two claimers never hold one delivery at once, and neither waits for
   * the other's rows. Deliveries of deleted endpoints are gone with them.
   */
  webhookDeliveryClaim(params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]>;
  /** Records the attempt's outcome; false (nothing changed) when the claim lapsed and was taken or completed. */
  webhookDeliveryComplete(params: WebhookDeliveryCompleteParams): Promise<boolean>;
  /** The namespace's deliveries, newest first, optionally of one endpoint, state or run. */
  webhookDeliveryList(params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult>;
  /**
   * A delivered or dead delivery becomes pending again, due now, attempts counted from 0, with the
   * same message id. WebhookDeliveryNotFoundError outside the namespace; WebhookDeliveryPendingError
   * when it is still pending.
   */
  webhookDeliveryRedeliver(params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery>;

  /**
   * API keys (docs/security.md). apiKeyCreate stores a new key (createdAt: the store's clock) and
   * returns it. Ids are 64 random bits: one already taken is a bug, and the write fails.
   */
  apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord>;
  /** One key by id, revoked or not; null when there is none. */
  apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null>;
  /** The key (revoked or not) its client certificate is bound to, by fingerprint; null when none is. */
  apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null>;
  /** Keys newest first (createdAt, then id), revoked ones only with `includeRevoked`. */
  apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]>;
  /** Sets revokedAt (the store's clock) once; a revoked key is returned unchanged; null for an unknown id. */
  apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null>;

  /**
   * Stores a new version of a flow (the latest version's number plus one), unless the latest
   * version's digest is `digest`: then nothing is written and that version is returned with
   * `created: false`. Concurrent registrations of one name get distinct versions.
   */
  flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult>;
  /** One version (the latest without `version`); null when the name or version is unknown in the namespace. */
  flowGet(params: FlowGetParams): Promise<FlowRecord | null>;
  /** The latest version of each flow of the namespace, by name. */
  flowList(params: FlowListParams): Promise<FlowRecord[]>;

  /**
   * Remote tools (remote-task-params.ts; docs/workers.md). workerHeartbeat marks a worker live for
   * `ttlMs` (store clock); with `tools` it also replaces the worker's tool list and upserts each
   * tool's declaration (the latest wins; declarations outlive their workers). Returns false when
   * `tools` is absent and the worker is unknown (it must register).
   */
  workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean>;
  /** A clean stop: the worker serves nothing from now on; its claimed tasks lapse as they would. */
  workerRemove(params: { namespace: string; workerId: string }): Promise<void>;
  /** The namespace's declared remote tools by name, each with its live workers. */
  remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]>;
  /**
   * Creates the task of the remote tool call journaled as the `suspended` entry (runId, seq), or
   * returns the existing one unchanged (a repeat after a crash). RunNotFoundError for an unknown run.
   */
  remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask>;
  /**
   * Claims up to `limit` tasks of `tools` in `queue`, oldest first: pending ones past their
   * `availableAt`, and claimed ones whose claim lapsed (a redispatch). Each claim bumps `attempt`
   * (the new fencing token), sets the holder and a claim of the task's heartbeat timeout. Only
   * tasks whose call is open: deadline not passed, suspension with no winning or cancelling
   * entry, run not terminal. Two claimers never get one task, and neither waits for the other's.
   */
  remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]>;
  /** Extends the holder's claim by the task's heartbeat timeout; null when fenced (another token, done, or the call closed). */
  remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null>;
  /**
   * The holder's result: under the run-row lock, checks the fence, then appends `entry` as the
   * resolution of the call's suspension (what journalResolve does, the run made claimable) and
   * marks the task done, atomically. A stale token writes nothing (`fenced`); a call already
   * closed marks the task done and writes nothing (`closed`).
   */
  remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult>;
  /** The holder's retryable failure: the task is pending again after `delayMs`; false when fenced. */
  remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean>;
  /** A run's tasks, by seq. */
  remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]>;

  /** The store's clock; leases and deadlines use it, never the worker's. */
  clockNow(): Promise<Date>;
  close(): Promise<void>;
}

export interface BudgetLockParams {
  namespace: string;
  /** The root of the run tree (the run with no parent) whose budgets the caller checks. */
  rootRunId: string;
}

export interface BudgetLock {
  release(): Promise<void>;
}

/** A workflow definition a replica serves, as the replica's heartbeat records it. */
export interface ServedWorkflow {
  name: string;
  version: string;
  digest: string;
  drift: 'warn' | 'strict';
  description: string;
  /** JSON Schema of the input; null when the workflow declares none. */
  inputSchema: Json | null;
  /** The definition's run timeout in milliseconds; null or absent (a replica from before timeouts): none. */
  timeoutMs?: number | null;
}

export interface ReplicaHeartbeatParams {
  replicaId: string;
  workflows: ServedWorkflow[];
  ttlMs: number;
}

export interface ReplicaInfo {
  replicaId: string;
  workflows: ServedWorkflow[];
  startedAt: Date;
  heartbeatAt: Date;
  expiresAt: Date;
}

export interface RunListUnroutableParams {
  olderThanMs: number;
  limit: number;
}

export interface UnroutableRun {
  runId: string;
  namespace: string;
  workflowName: string;
  workflowDigest: string;
  /** When it became PENDING (its last status change). */
  pendingSince: Date;
}
