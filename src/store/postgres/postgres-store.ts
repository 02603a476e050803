import type pg from 'pg';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { DEFAULT_LIMITS, type Limits } from '../../journal/limits.js';
import type { Lease, Run } from '../../journal/run.js';
import type {
  DeadlineNext, ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams, BufferedSignal, FlowGetParams,
  FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult, JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalListParams,
  JournalResolveParams, JournalResolveResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams, OrphanedRun, RemoteTask,
  RemoteTaskClaimParams, RemoteTaskNextAtParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams, RemoteTaskFence, RemoteTaskListParams, RemoteTaskRetryParams, RemoteToolInfo,
  RemoteToolListParams, ReplicaHeartbeatParams, ReplicaInfo, RunClaimParams, RunCountByStatusResult, RunCreateParams, RunForksParams, RunCreateResult, RunDigestSetParams, RunGetParams, RunContinueAsNewParams, RunContinueAsNewResult,
  RunLeaseAcquireParams, RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams, RunListEndedChildrenParams, RunListOrphansParams, RunListParams, RunListResult,
  RunListTimedOutParams, RunListUnroutableParams, RunRecoverDeadSessionsParams, RunRecoverExpiredParams, RunRecoverExpiredResult, RunStatusForceParams, RunStatusForceResult, RunStatusSetParams,
  RunStatusSetResult, SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult, SignalInboxListParams, SuspensionListDueParams, SuspensionListParams,
  SuspensionListResult, SuspensionOpenOldestParams, SweeperLease, SweeperLeaseAcquireParams, SweeperLeaseReleaseParams, SweeperLeaseRenewParams, UnroutableRun, WebhookClaim,
  WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams, WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams,
  WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams, WorkerHeartbeatParams,
  BudgetLock, BudgetLockParams, JournalStore, RunCostDaily, RunCostDailyListParams, RunPurgeParams, RunPurgeResult, McpServerKeyParams, McpServerPutParams, McpServerPutResult, McpServerRecord, LeaseSessionParams, WakeupSubscribeParams, WakeupUnsubscribe,
  ModelDelta, ModelDeltaAppendParams, ModelDeltaListParams,
} from '../store.js';
import { STORE_DEFAULTS } from '../store-kind.js';
import { AppendBatcher } from './append-batcher.js';
import { BudgetLocks } from './budget-lock.js';
import { LeaseSessions } from './lease-sessions.js';
import { PgAccess } from './pg-access.js';
import { openPools, type PostgresStoreOptions } from './postgres-pools.js';
import { translatePgError } from './pg-errors.js';
import { WakeupListener } from './wakeup-listener.js';
import * as apiKeys from './api-keys-ops.js';
import * as flows from './flows-ops.js';
import * as journal from './journal-ops.js';
import * as mcpServers from './mcp-servers-ops.js';
import * as deltas from './model-deltas-ops.js';
import * as remote from './remote-tasks-ops.js';
import * as replicas from './replicas-ops.js';
import * as retention from './retention-ops.js';
import { runContinueAsNew } from './continue-ops.js';
import * as runs from './runs-ops.js';
import { PostgresScheduleOps } from './schedules-ops.js';
import * as signals from './signals-ops.js';
import * as sweeper from './sweeper-ops.js';
import * as webhooks from './webhooks-ops.js';

export type { PostgresStoreOptions } from './postgres-pools.js';

/**
 * JournalStore on PostgreSQL. Three connection groups: the main pool; a 2-connection lease pool for
 * renewals and releases, so a busy main pool cannot starve a renewal into a spurious takeover
 * (reliability.md §2.10); and one LISTEN client for wake-ups. The fence is the run row's
 * lease_epoch compared in the same statement that takes the row lock (see journal-queries.ts).
 * Each area's methods live in `<area>-ops.ts` as functions of the PgAccess this class lends them (the
 * schedules' are inherited); this class holds the connections and the state that outlives a call. */
export class PostgresStore extends PostgresScheduleOps implements JournalStore {
  readonly limits: Limits;
  /** Wake-up connection; emits 'connected' and 'lost'. */
  readonly listener: WakeupListener;
  private closing: Promise<void> | null = null;
  protected readonly db: PgAccess;
  private readonly batcher: AppendBatcher | null;
  private readonly budgetLocks: BudgetLocks;
  private readonly leaseSessions: LeaseSessions;

  private constructor(
    readonly pool: pg.Pool,
    readonly leasePool: pg.Pool,
    private readonly lockPool: pg.Pool,
    sessionConfig: (role: string) => pg.ClientConfig,
    options: PostgresStoreOptions,
  ) {
    super();
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.db = new PgAccess(pool, leasePool, this.limits, options.sweeperLockTimeoutMs ?? 500);
    this.budgetLocks = new BudgetLocks(lockPool);
    const inFlight = options.appendsInFlight ?? STORE_DEFAULTS.appendsInFlight;
    this.batcher = inFlight > 0 ? new AppendBatcher({ maxInFlight: inFlight, maxBatch: 64, send: (batch) => journal.appendBatch(this.db, batch) }) : null;
    const onError = (err: unknown, message: string) => options.logger?.warn({ err }, message);
    const backoff = { minBackoffMs: options.listenerBackoffMs?.min, maxBackoffMs: options.listenerBackoffMs?.max };
    this.listener = new WakeupListener({ client: sessionConfig('listen'), onError, ...backoff });
    this.leaseSessions = new LeaseSessions({
      client: sessionConfig('session'), ...backoff,
      onError: (err, message, holder) => options.logger?.warn({ err, holder }, message),
    });
  }

  /** Opens the pools and checks the database answers (StoreUnavailableError if not). */
  static async connect(options: PostgresStoreOptions): Promise<PostgresStore> {
    const { pool, leasePool, lockPool, sessionConfig } = openPools(options);
    const store = new PostgresStore(pool, leasePool, lockPool, sessionConfig, options);
    try {
      await pool.query({ name: 'store_ping', text: 'SELECT 1' });
    } catch (err) {
      await store.close();
      throw translatePgError(err);
    }
    return store;
  }

  runCreate(params: RunCreateParams): Promise<RunCreateResult> {
    return runs.runCreate(this.db, params);
  }

  runGet(params: RunGetParams): Promise<Run> {
    return runs.runGet(this.db, params);
  }

  runList(params: RunListParams): Promise<RunListResult> {
    return runs.runList(this.db, params);
  }

  runLeaseAcquire(params: RunLeaseAcquireParams): Promise<Lease | null> {
    return runs.runLeaseAcquire(this.db, params);
  }

  runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
    return runs.runLeaseAcquireRunning(this.db, params);
  }

  runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease> {
    return runs.runLeaseRenew(this.db, params);
  }

  runLeaseRelease(params: RunLeaseReleaseParams): Promise<void> {
    return runs.runLeaseRelease(this.db, params);
  }

  runClaim(params: RunClaimParams): Promise<Lease[]> {
    return runs.runClaim(this.db, params);
  }

  runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult> {
    return runs.runStatusSet(this.db, params);
  }
  runDigestSet(params: RunDigestSetParams): Promise<RunStatusSetResult> {
    return runs.runDigestSet(this.db, params);
  }
  runContinueAsNew(params: RunContinueAsNewParams): Promise<RunContinueAsNewResult> { return runContinueAsNew(this.db, params); }

  runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
    return runs.runStatusForce(this.db, params);
  }

  runCountByStatus(): Promise<RunCountByStatusResult> { return runs.runCountByStatus(this.db); }
  runForks(params: RunForksParams): Promise<string[]> { return runs.runForks(this.db, params); }

  journalAppend(params: JournalAppendParams): Promise<JournalEntry[]> {
    return journal.journalAppend(this.db, this.batcher, params);
  }

  journalList(params: JournalListParams): Promise<JournalEntry[]> {
    return journal.journalList(this.db, params);
  }

  journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
    return journal.journalCostTotals(this.db, params);
  }

  journalSpend(params: JournalSpendParams): Promise<JournalSpendResult> {
    return journal.journalSpend(this.db, params);
  }

  journalWaits(params: JournalWaitsParams): Promise<JournalWait[]> {
    return journal.journalWaits(this.db, params);
  }

  journalResolve(params: JournalResolveParams): Promise<JournalResolveResult> {
    return journal.journalResolve(this.db, params);
  }

  runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
    return sweeper.runRecoverExpired(this.db, params);
  }

  runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
    return sweeper.runRecoverDeadSessions(this.db, params);
  }

  suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]> {
    return sweeper.suspensionListDue(this.db, params);
  }

  runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]> {
    return sweeper.runListEndedChildren(this.db, params);
  }

  runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]> {
    return sweeper.runListOrphans(this.db, params);
  }

  deadlineNext(): Promise<DeadlineNext> {
    return sweeper.deadlineNext(this.db);
  }
  runListTimedOut(params: RunListTimedOutParams): Promise<Run[]> {
    return sweeper.runListTimedOut(this.db, params);
  }

  sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
    return sweeper.sweeperLeaseAcquire(this.db, params);
  }

  sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease> {
    return sweeper.sweeperLeaseRenew(this.db, params);
  }

  sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void> {
    return sweeper.sweeperLeaseRelease(this.db, params);
  }

  suspensionList(params: SuspensionListParams): Promise<SuspensionListResult> {
    return signals.suspensionList(this.db, params);
  }

  suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
    return signals.suspensionOpenOldest(this.db, params);
  }

  signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult> {
    return signals.signalDeliver(this.db, params);
  }

  signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]> {
    return signals.signalInboxList(this.db, params);
  }

  signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
    return signals.signalInboxConsume(this.db, params);
  }

  replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void> {
    return replicas.replicaHeartbeat(this.db, params);
  }

  replicaRemove(params: { replicaId: string }): Promise<void> {
    return replicas.replicaRemove(this.db, params);
  }

  replicaList(): Promise<ReplicaInfo[]> {
    return replicas.replicaList(this.db);
  }

  runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]> {
    return replicas.runListUnroutable(this.db, params);
  }

  webhookEndpointCreate(params: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
    return webhooks.webhookEndpointCreate(this.db, params);
  }

  webhookEndpointList(params: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
    return webhooks.webhookEndpointList(this.db, params);
  }

  webhookEndpointDelete(params: WebhookEndpointDeleteParams): Promise<void> {
    return webhooks.webhookEndpointDelete(this.db, params);
  }

  webhookEndpointRotate(params: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
    return webhooks.webhookEndpointRotate(this.db, params);
  }

  webhookDeliveryClaim(params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
    return webhooks.webhookDeliveryClaim(this.db, params);
  }

  webhookDeliveryComplete(params: WebhookDeliveryCompleteParams): Promise<boolean> {
    return webhooks.webhookDeliveryComplete(this.db, params);
  }

  webhookDeliveryList(params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
    return webhooks.webhookDeliveryList(this.db, params);
  }

  webhookDeliveryRedeliver(params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
    return webhooks.webhookDeliveryRedeliver(this.db, params);
  }

  apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
    return apiKeys.apiKeyCreate(this.db, params);
  }

  apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
    return apiKeys.apiKeyGet(this.db, params);
  }

  apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
    return apiKeys.apiKeyGetByClientCert(this.db, params);
  }

  apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
    return apiKeys.apiKeyList(this.db, params);
  }

  apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
    return apiKeys.apiKeyRevoke(this.db, params);
  }

  flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult> {
    return flows.flowRegister(this.db, params);
  }

  flowGet(params: FlowGetParams): Promise<FlowRecord | null> {
    return flows.flowGet(this.db, params);
  }

  flowList(params: FlowListParams): Promise<FlowRecord[]> {
    return flows.flowList(this.db, params);
  }

  mcpServerPut(params: McpServerPutParams): Promise<McpServerPutResult> { return mcpServers.mcpServerPut(this.db, params); }
  mcpServerGet(params: McpServerKeyParams): Promise<McpServerRecord | null> { return mcpServers.mcpServerGet(this.db, params); }
  mcpServerList(params: { namespace: string }): Promise<McpServerRecord[]> { return mcpServers.mcpServerList(this.db, params); }
  mcpServerRemove(params: McpServerKeyParams): Promise<boolean> { return mcpServers.mcpServerRemove(this.db, params); }

  modelDeltaAppend = (params: ModelDeltaAppendParams): Promise<void> => deltas.modelDeltaAppend(this.db, params);
  modelDeltaList = (params: ModelDeltaListParams): Promise<ModelDelta[]> => deltas.modelDeltaList(this.db, params);
  modelDeltaSweep = (params: { before: Date; limit: number }): Promise<number> => deltas.modelDeltaSweep(this.db, params);

  workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean> {
    return remote.workerHeartbeat(this.db, params);
  }

  workerRemove(params: { namespace: string; workerId: string }): Promise<void> {
    return remote.workerRemove(this.db, params);
  }

  remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]> {
    return remote.remoteToolList(this.db, params);
  }

  remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask> {
    return remote.remoteTaskCreate(this.db, params);
  }

  remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]> {
    return remote.remoteTaskClaim(this.db, params);
  }

  remoteTaskNextAt(params: RemoteTaskNextAtParams): Promise<number | null> {
    return remote.remoteTaskNextAt(this.db, params);
  }

  remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null> {
    return remote.remoteTaskHeartbeat(this.db, params);
  }

  remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult> {
    return remote.remoteTaskComplete(this.db, params);
  }

  remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean> {
    return remote.remoteTaskRetry(this.db, params);
  }

  remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]> {
    return remote.remoteTaskList(this.db, params.runId);
  }

  async leaseSessionOpen(params: LeaseSessionParams): Promise<void> {
    return this.leaseSessions.open(params.holder);
  }

  async leaseSessionClose(params: LeaseSessionParams): Promise<void> {
    return this.leaseSessions.close(params.holder);
  }

  /** The backend pid of `holder`'s lease session (tests end it with pg_terminate_backend). */
  leaseSessionPid(holder: string): number | null {
    return this.leaseSessions.pid(holder);
  }

  /** Tests: `holder`'s session ends as a killed process's would (its registration stays, dead). */
  async leaseSessionEnd(holder: string): Promise<void> {
    return this.leaseSessions.end(holder);
  }

  runPurge(params: RunPurgeParams): Promise<RunPurgeResult> { return retention.runPurge(this.db, params); }
  runCostDailyList(params: RunCostDailyListParams): Promise<RunCostDaily[]> { return retention.runCostDailyList(this.db, params); }
  async wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe> {
    return this.listener.subscribe(params);
  }

  async budgetLock(params: BudgetLockParams): Promise<BudgetLock> {
    return this.budgetLocks.acquire(params);
  }

  async clockNow(): Promise<Date> {
    const { rows } = await this.db.query<{ now: Date }>({ name: 'store_clock_now', text: 'SELECT clock_timestamp() AS now' });
    return rows[0]!.now;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.listener.close();
      await this.leaseSessions.closeAll();
      await Promise.all([this.pool.end(), this.leasePool.end(), this.lockPool.end()]);
    })();
    return this.closing;
  }
}
