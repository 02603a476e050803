import type { JournalEntry } from '../../journal/journal-entry.js';
import { DEFAULT_LIMITS, type Limits } from '../../journal/limits.js';
import type { Lease, Run } from '../../journal/run.js';
import { KeyedMutex } from '../keyed-mutex.js';
import type {
  DeadlineNext, RunContinueAsNewParams, RunContinueAsNewResult,
  ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams, BufferedSignal, FlowGetParams,
  FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult, JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalListParams,
  JournalResolveParams, JournalResolveResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams, LeaseSessionParams, OrphanedRun,
  RemoteTask, RemoteTaskClaimParams, RemoteTaskNextAtParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams, RemoteTaskFence, RemoteTaskListParams, RemoteTaskRetryParams,
  RemoteToolInfo, RemoteToolListParams, ReplicaHeartbeatParams, ReplicaInfo, RunClaimParams, RunCountByStatusResult, RunCreateParams, RunForksParams, RunCreateResult,
  RunDigestSetParams, RunGetParams, RunLeaseAcquireParams, RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams, RunListEndedChildrenParams, RunListOrphansParams, RunListParams,
  RunListResult, RunListTimedOutParams, RunListUnroutableParams, RunRecoverDeadSessionsParams, RunRecoverExpiredParams, RunRecoverExpiredResult, RunStatusForceParams, RunStatusForceResult,
  RunStatusSetParams, RunStatusSetResult, SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult, SignalInboxListParams, SuspensionListDueParams,
  SuspensionListParams, SuspensionListResult, SuspensionOpenOldestParams, SweeperLease, SweeperLeaseAcquireParams, SweeperLeaseReleaseParams, SweeperLeaseRenewParams, UnroutableRun,
  WebhookClaim, WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams, WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint,
  WebhookEndpointCreateParams, WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams, WorkerHeartbeatParams,
  BudgetLock, BudgetLockParams, JournalStore, RunCostDaily, RunCostDailyListParams, RunPurgeParams, RunPurgeResult, McpServerKeyParams, McpServerPutParams, McpServerPutResult, McpServerRecord, WakeupSubscribeParams, WakeupUnsubscribe,
  ModelDelta, ModelDeltaAppendParams, ModelDeltaListParams,
} from '../store.js';
import { MemoryApiKeys } from './memory-api-keys.js';
import { MemoryFlows } from './memory-flows.js';
import { MemoryJournal } from './memory-journal.js';
import { MemoryMcpServers } from './memory-mcp-servers.js';
import { MemoryModelDeltas } from './memory-model-deltas.js';
import { MemoryRemoteTasks } from './memory-remote-tasks.js';
import { MemoryReplicas } from './memory-replicas.js';
import { MemoryRetention } from './memory-retention.js';
import { MemoryRunTable } from './memory-run-table.js';
import { MemoryScheduleOps, MemorySchedules } from './memory-schedules.js';
import { MemoryRuns } from './memory-runs.js';
import { MemorySignalInbox } from './memory-signal-inbox.js';
import { MemorySweeper } from './memory-sweeper.js';
import type { MemoryWebhooks } from './memory-webhooks.js';

export interface MemoryStoreOptions {
  limits?: Partial<Limits>;
  /** The store's clock (the "database clock" of leases and deadlines); tests move it. */
  clock?: () => Date;
}

/**
 * The in-memory JournalStore: the reference semantics the Postgres store is held to by
 * test/conformance. Every method does all its work synchronously before its first await, so each
 * call is atomic just as a transaction under the run-row lock is. Values are cloned in and out so a
 * caller mutating an object cannot edit the journal behind the store's back. The rows are one
 * MemoryRunTable (memory-run-table.ts); each area's methods live in `memory-<area>.ts`.
 */
export class MemoryStore extends MemoryScheduleOps implements JournalStore {
  readonly limits: Limits;
  private readonly table: MemoryRunTable;
  private readonly flows: MemoryFlows;
  private readonly mcpServers: MemoryMcpServers;
  private readonly deltas: MemoryModelDeltas;
  protected readonly schedules: MemorySchedules;
  private readonly replicas: MemoryReplicas;
  private readonly runs: MemoryRuns;
  private readonly journal: MemoryJournal;
  private readonly sweeper: MemorySweeper;
  private readonly signals: MemorySignalInbox;
  private readonly webhooks: MemoryWebhooks;
  private readonly apiKeys: MemoryApiKeys;
  private readonly remote: MemoryRemoteTasks;
  private readonly retention: MemoryRetention;
  private readonly budgetLocks = new KeyedMutex();

  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    const table = new MemoryRunTable(this.limits, options.clock ?? (() => new Date()));
    this.table = table;
    this.flows = new MemoryFlows(() => table.now());
    this.mcpServers = new MemoryMcpServers(() => table.now());
    this.deltas = new MemoryModelDeltas(table);
    this.replicas = new MemoryReplicas(table, this.flows);
    this.runs = new MemoryRuns(table, this.replicas, this.flows);
    this.journal = new MemoryJournal(table);
    this.schedules = new MemorySchedules({
      now: () => table.now(), runCreate: (p) => this.runs.runCreate(p), run: (id) => table.runs.get(id)?.run, sweeperFence: (l) => table.sweeperFence(l),
    });
    this.sweeper = new MemorySweeper(table);
    this.signals = new MemorySignalInbox(table, this.journal);
    this.webhooks = table.webhooks;
    this.apiKeys = new MemoryApiKeys(() => table.now());
    this.remote = new MemoryRemoteTasks({
      now: () => table.now(),
      runFacts: (runId) => table.runs.get(runId),
      resolve: (params) => this.journal.journalResolve(params),
      taskWoken: (namespace) => table.wakeups.notifyTask(namespace),
    });
    this.retention = new MemoryRetention(table, this.remote);
  }

  runCreate(params: RunCreateParams): Promise<RunCreateResult> {
    return this.runs.runCreate(params);
  }

  runGet(params: RunGetParams): Promise<Run> {
    return this.runs.runGet(params);
  }

  runList(params: RunListParams): Promise<RunListResult> {
    return this.runs.runList(params);
  }

  runLeaseAcquire(params: RunLeaseAcquireParams): Promise<Lease | null> {
    return this.runs.runLeaseAcquire(params);
  }

  runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
    return this.runs.runLeaseAcquireRunning(params);
  }

  runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease> {
    return this.runs.runLeaseRenew(params);
  }

  runLeaseRelease(params: RunLeaseReleaseParams): Promise<void> {
    return this.runs.runLeaseRelease(params);
  }

  runClaim(params: RunClaimParams): Promise<Lease[]> {
    return this.runs.runClaim(params);
  }

  runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult> {
    return this.runs.runStatusSet(params);
  }
  runContinueAsNew(params: RunContinueAsNewParams): Promise<RunContinueAsNewResult> { return this.runs.runContinueAsNew(params); }  runDigestSet(params: RunDigestSetParams): Promise<RunStatusSetResult> {
    return this.runs.runDigestSet(params);
  }


  runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
    return this.runs.runStatusForce(params);
  }

  runCountByStatus(): Promise<RunCountByStatusResult> {
    return this.runs.runCountByStatus();
  }

  runForks(params: RunForksParams): Promise<string[]> {
    return this.runs.runForks(params);
  }

  journalAppend(params: JournalAppendParams): Promise<JournalEntry[]> {
    return this.journal.journalAppend(params);
  }

  journalList(params: JournalListParams): Promise<JournalEntry[]> {
    return this.journal.journalList(params);
  }

  journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
    return this.journal.journalCostTotals(params);
  }

  journalSpend(params: JournalSpendParams): Promise<JournalSpendResult> {
    return this.journal.journalSpend(params);
  }

  journalWaits(params: JournalWaitsParams): Promise<JournalWait[]> {
    return this.journal.journalWaits(params);
  }

  journalResolve(params: JournalResolveParams): Promise<JournalResolveResult> {
    return this.journal.journalResolve(params);
  }

  runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
    return this.sweeper.runRecoverExpired(params);
  }

  runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
    return this.sweeper.runRecoverDeadSessions(params);
  }

  leaseSessionOpen(params: LeaseSessionParams): Promise<void> {
    return this.sweeper.leaseSessionOpen(params);
  }

  leaseSessionClose(params: LeaseSessionParams): Promise<void> {
    return this.sweeper.leaseSessionClose(params);
  }

  suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]> {
    return this.sweeper.suspensionListDue(params);
  }

  runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]> {
    return this.sweeper.runListEndedChildren(params);
  }

  runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]> {
    return this.sweeper.runListOrphans(params);
  }

  deadlineNext(): Promise<DeadlineNext> {
    return this.sweeper.deadlineNext();
  }
  runListTimedOut(params: RunListTimedOutParams): Promise<Run[]> {
    return this.sweeper.runListTimedOut(params);
  }

  sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
    return this.sweeper.sweeperLeaseAcquire(params);
  }

  sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease> {
    return this.sweeper.sweeperLeaseRenew(params);
  }

  sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void> {
    return this.sweeper.sweeperLeaseRelease(params);
  }

  suspensionList(params: SuspensionListParams): Promise<SuspensionListResult> {
    return this.signals.suspensionList(params);
  }

  suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
    return this.signals.suspensionOpenOldest(params);
  }

  signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult> {
    return this.signals.signalDeliver(params);
  }

  signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]> {
    return this.signals.signalInboxList(params);
  }

  signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
    return this.signals.signalInboxConsume(params);
  }

  replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void> {
    return this.replicas.replicaHeartbeat(params);
  }

  replicaRemove(params: { replicaId: string }): Promise<void> {
    return this.replicas.replicaRemove(params);
  }

  replicaList(): Promise<ReplicaInfo[]> {
    return this.replicas.replicaList();
  }

  runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]> {
    return this.replicas.runListUnroutable(params);
  }

  webhookEndpointCreate(params: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
    return this.webhooks.webhookEndpointCreate(params);
  }

  webhookEndpointList(params: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
    return this.webhooks.webhookEndpointList(params);
  }

  webhookEndpointDelete(params: WebhookEndpointDeleteParams): Promise<void> {
    return this.webhooks.webhookEndpointDelete(params);
  }

  webhookEndpointRotate(params: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
    return this.webhooks.webhookEndpointRotate(params);
  }

  webhookDeliveryClaim(params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
    return this.webhooks.webhookDeliveryClaim(params);
  }

  webhookDeliveryComplete(params: WebhookDeliveryCompleteParams): Promise<boolean> {
    return this.webhooks.webhookDeliveryComplete(params);
  }

  webhookDeliveryList(params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
    return this.webhooks.webhookDeliveryList(params);
  }

  webhookDeliveryRedeliver(params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
    return this.webhooks.webhookDeliveryRedeliver(params);
  }

  apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
    return this.apiKeys.apiKeyCreate(params);
  }

  apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
    return this.apiKeys.apiKeyGet(params);
  }

  apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
    return this.apiKeys.apiKeyGetByClientCert(params);
  }

  apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
    return this.apiKeys.apiKeyList(params);
  }

  apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
    return this.apiKeys.apiKeyRevoke(params);
  }

  async flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult> {
    return this.flows.flowRegister(params);
  }

  async flowGet(params: FlowGetParams): Promise<FlowRecord | null> {
    return this.flows.flowGet(params);
  }

  async flowList(params: FlowListParams): Promise<FlowRecord[]> {
    return this.flows.flowList(params);
  }

  async modelDeltaAppend(params: ModelDeltaAppendParams): Promise<void> { this.deltas.modelDeltaAppend(params); }
  async modelDeltaList(params: ModelDeltaListParams): Promise<ModelDelta[]> { return this.deltas.modelDeltaList(params); }
  async modelDeltaSweep(params: { before: Date; limit: number }): Promise<number> { return this.deltas.modelDeltaSweep(params); }
  async mcpServerPut(params: McpServerPutParams): Promise<McpServerPutResult> { return this.mcpServers.mcpServerPut(params); }
  async mcpServerGet(params: McpServerKeyParams): Promise<McpServerRecord | null> { return this.mcpServers.mcpServerGet(params); }
  async mcpServerList(params: { namespace: string }): Promise<McpServerRecord[]> { return this.mcpServers.mcpServerList(params); }
  async mcpServerRemove(params: McpServerKeyParams): Promise<boolean> { return this.mcpServers.mcpServerRemove(params); }

  workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean> {
    return this.remote.workerHeartbeat(params);
  }

  workerRemove(params: { namespace: string; workerId: string }): Promise<void> {
    return this.remote.workerRemove(params);
  }

  remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]> {
    return this.remote.remoteToolList(params);
  }

  remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask> {
    return this.remote.remoteTaskCreate(params);
  }

  remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]> {
    return this.remote.remoteTaskClaim(params);
  }

  remoteTaskNextAt(params: RemoteTaskNextAtParams): Promise<number | null> {
    return this.remote.remoteTaskNextAt(params);
  }

  remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null> {
    return this.remote.remoteTaskHeartbeat(params);
  }

  remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult> {
    return this.remote.remoteTaskComplete(params);
  }

  remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean> {
    return this.remote.remoteTaskRetry(params);
  }

  remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]> {
    return this.remote.remoteTaskList(params);
  }

  /** Tests: `holder`'s session ends as a killed process's would (its registration stays, dead). */
  leaseSessionEnd(holder: string): Promise<void> {
    return this.sweeper.leaseSessionEnd(holder);
  }

  runPurge(params: RunPurgeParams): Promise<RunPurgeResult> {
    return this.retention.runPurge(params);
  }

  runCostDailyList(params: RunCostDailyListParams): Promise<RunCostDaily[]> {
    return this.retention.runCostDailyList(params);
  }

  async wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe> {
    return this.table.wakeups.subscribe(params);
  }

  async budgetLock(params: BudgetLockParams): Promise<BudgetLock> {
    const release = await this.budgetLocks.acquire(`${params.namespace}\u0000${params.rootRunId}`);
    return { release: async () => release() };
  }

  async clockNow(): Promise<Date> {
    return this.table.now();
  }

  async close(): Promise<void> {
    this.table.wakeups.clear();
  }
}
