import pg from 'pg';
import {
  IdempotencyConflictError, JournalFullError, LeaseLostError, RunNotFoundError, RunStateError, SweeperLeaseLostError,
} from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { DEFAULT_LIMITS, type Limits } from '../../journal/limits.js';
import { isTerminalStatus, type Lease, type Run, type RunError, type RunStatus } from '../../journal/run.js';
import { assertPageSize, decodeRunCursor, encodeRunCursor } from '../run-cursor.js';
import { isRunId, newRunId } from '../run-id.js';
import type {
  ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams,
  FlowGetParams, FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult,
  BudgetLock, BudgetLockParams, BufferedSignal, ReplicaHeartbeatParams, ReplicaInfo, RunListUnroutableParams, UnroutableRun, JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams, JournalListParams,
  JournalResolveParams, JournalResolveResult, JournalStore, OrphanedRun, RunClaimParams, RunCountByStatusResult,
  RunCreateParams, RunCreateResult, RunGetParams, RunLeaseAcquireParams, RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams,
  RunListEndedChildrenParams, RunListOrphansParams, RunListParams, RunListResult, RunListTimedOutParams, RunRecoverDeadSessionsParams, RunRecoverExpiredParams, LeaseSessionParams,
  RunRecoverExpiredResult, RunStatusForceParams, RunStatusForceResult, RunStatusSetParams, RunStatusSetResult,
  SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult,
  SignalInboxListParams, SuspensionListDueParams, SuspensionListParams, SuspensionListResult,
  SuspensionOpenOldestParams, SweeperLease, SweeperLeaseAcquireParams, SweeperLeaseReleaseParams,
  SweeperLeaseRenewParams, WakeupSubscribeParams, WakeupUnsubscribe,
} from '../store.js';
import { notASuspension } from '../store-errors.js';
import type {
  RemoteTask, RemoteTaskClaimParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams,
  RemoteTaskFence, RemoteTaskListParams, RemoteTaskRetryParams, RemoteToolInfo, RemoteToolListParams, WorkerHeartbeatParams,
} from '../remote-task-params.js';
import type {
  WebhookClaim, WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams,
  WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams,
  WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams,
} from '../webhook-params.js';
import { STORE_DEFAULTS, type StoreLogger } from '../store-kind.js';
import { assertEntriesFit, assertForcedStatusFits, assertRunCreateFits, assertStatusFits, suspensionDeadline } from '../write-checks.js';
import { suspensionListDue } from './deadlines-queries.js';
import * as jq from './journal-queries.js';
import { AppendBatcher, type AppendRequest } from './append-batcher.js';
import { BUDGET_LOCK_POOL_SIZE, BUDGET_LOCK_WAIT_MS, BudgetLocks } from './budget-lock.js';
import { isUnavailable, sqlState, translatePgError, type ErrorContext } from './pg-errors.js';
import * as signals from './signals-ops.js';
import * as webhooks from './webhooks-ops.js';
import * as remote from './remote-tasks-ops.js';
import * as tq from './remote-tasks-queries.js';
import * as akq from './api-keys-queries.js';
import * as fq from './flows-queries.js';
import * as repq from './replicas-queries.js';
import * as rq from './runs-queries.js';
import * as slq from './sweeper-leader-queries.js';
import * as sq from './sweeper-queries.js';
import { LeaseSession } from './lease-sessions.js';
import { WakeupListener } from './wakeup-listener.js';

export interface PostgresStoreOptions {
  url: string;
  limits?: Partial<Limits>;
  /** Connections in the main pool (appends, reads, claims, sweeps). Default 10. */
  poolSize?: number;
  applicationName?: string;
  logger?: StoreLogger;
  /** Waiting for a pooled connection longer than this is StoreUnavailableError. Default 5000. */
  connectionTimeoutMs?: number;
  /** Per-session statement_timeout. Default 10000. */
  statementTimeoutMs?: number;
  /** Per-session idle_in_transaction_session_timeout: a stalled transaction frees its row locks. Default 5000. */
  idleInTransactionTimeoutMs?: number;
  /** lock_timeout for sweeper statements: skip a contended run rather than queue behind it. Default 500. */
  sweeperLockTimeoutMs?: number;
  /** Reconnect backoff of the LISTEN connection (doubling, jittered). Default 50 to 5000 ms. */
  listenerBackoffMs?: { min: number; max: number };
  /**
   * Journal appends running at once; appends arriving meanwhile wait and then go together, one
   * statement for many runs (group commit, append-batcher.ts). Default 2; 0 sends each on its own.
   * On 2 cores at 16 concurrent runs, 1 and 2 gave the most steps/s (4,750 and 4,500), 4 gave
   * 3,950 and 8 gave 2,870: fewer statements, larger batches, less PostgreSQL CPU per step.
   */
  appendsInFlight?: number;
}

/**
 * JournalStore on PostgreSQL. Three connection groups: the main pool; a 2-connection lease pool for
 * renewals and releases, so a busy main pool cannot starve a renewal into a spurious takeover
 * (reliability.md §2.10); and one LISTEN client for wake-ups. The fence is the run row's
 * lease_epoch compared in the same statement that takes the row lock (see journal-queries.ts).
 */
export class PostgresStore implements JournalStore {
  readonly limits: Limits;
  /** Wake-up connection; emits 'connected' and 'lost'. */
  readonly listener: WakeupListener;
  private closing: Promise<void> | null = null;
  private readonly batcher: AppendBatcher | null;
  private readonly budgetLocks: BudgetLocks;
  /** The lease sessions this store holds, by holder (lease-sessions.ts). */
  private readonly leaseSessions = new Map<string, LeaseSession>();

  private constructor(
    readonly pool: pg.Pool,
    readonly leasePool: pg.Pool,
    private readonly lockPool: pg.Pool,
    private readonly sessionConfig: (role: string) => pg.ClientConfig,
    private readonly options: PostgresStoreOptions,
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.budgetLocks = new BudgetLocks(lockPool);
    const inFlight = options.appendsInFlight ?? STORE_DEFAULTS.appendsInFlight;
    this.batcher = inFlight > 0 ? new AppendBatcher({ maxInFlight: inFlight, maxBatch: 64, send: (batch) => this.appendBatch(batch) }) : null;
    const onError = (err: unknown, message: string) => options.logger?.warn({ err }, message);
    this.listener = new WakeupListener({
      client: sessionConfig('listen'), onError,
      minBackoffMs: options.listenerBackoffMs?.min, maxBackoffMs: options.listenerBackoffMs?.max,
    });
  }

  /** Opens the pools and checks the database answers (StoreUnavailableError if not). */
  static async connect(options: PostgresStoreOptions): Promise<PostgresStore> {
    const app = options.applicationName ?? 'waymark';
    const session = (name: string): pg.PoolConfig => ({
      connectionString: options.url,
      application_name: name,
      connectionTimeoutMillis: options.connectionTimeoutMs ?? 5_000,
      keepAlive: true,
      // Set per session at connect time, so no pooled connection runs without them.
      options: `-c statement_timeout=${options.statementTimeoutMs ?? 10_000} ` +
        `-c idle_in_transaction_session_timeout=${options.idleInTransactionTimeoutMs ?? 5_000}`,
    });
    const pool = new pg.Pool({ ...session(app), max: options.poolSize ?? 10 });
    const leasePool = new pg.Pool({ ...session(`${app}:lease`), max: 2 });
    for (const p of [pool, leasePool]) {
      // An idle client's backend can die at any time (pg_terminate_backend, restart); without a
      // listener that 'error' event would crash the process.
      p.on('error', (err) => options.logger?.warn({ err }, 'idle database connection failed; the pool replaces it'));
    }
    // Sessions of the budget lock pool wait for an advisory lock at most BUDGET_LOCK_WAIT_MS.
    const lockPool = new pg.Pool({
      ...session(`${app}:budget`), max: BUDGET_LOCK_POOL_SIZE,
      options: `-c statement_timeout=${BUDGET_LOCK_WAIT_MS} -c idle_in_transaction_session_timeout=${options.idleInTransactionTimeoutMs ?? 5_000}`,
    });
    lockPool.on('error', (err) => options.logger?.warn({ err }, 'idle database connection failed; the pool replaces it'));
    const store = new PostgresStore(pool, leasePool, lockPool, (role) => session(`${app}:${role}`), options);
    try {
      await pool.query({ name: 'store_ping', text: 'SELECT 1' });
    } catch (err) {
      await store.close();
      throw translatePgError(err);
    }
    return store;
  }

  async runCreate(params: RunCreateParams): Promise<RunCreateResult> {
    assertRunCreateFits(params, this.limits);
    if (params.parentRunId && !isRunId(params.parentRunId)) throw new RunNotFoundError(params.parentRunId);
    const ctx = { parentRunId: params.parentRunId };
    const inserted = await this.query<rq.RunRow & rq.LeaseRow>(rq.runInsert({ ...params, id: newRunId() }), ctx);
    const row = inserted.rows[0];
    if (row) return { run: rq.toRun(row), created: true, lease: params.leaseFor ? rq.toLease(row) : null };
    // ON CONFLICT waited for any in-flight insert of this key, so the first run is committed now.
    const existing = (await this.query<rq.RunRow>(rq.runByIdempotencyKey(params.namespace, params.idempotencyKey!))).rows[0];
    if (!existing) throw new Error(`run for idempotency key "${params.idempotencyKey}" vanished during runCreate`);
    const run = rq.toRun(existing);
    if (run.workflowName !== params.workflowName) throw new IdempotencyConflictError(params.idempotencyKey!, run.id);
    return { run, created: false, lease: null };
  }

  async runGet(params: RunGetParams): Promise<Run> {
    return this.findRun(params.runId, params.namespace);
  }

  async runList(params: RunListParams): Promise<RunListResult> {
    assertPageSize(params.pageSize);
    const after = params.cursor ? decodeRunCursor(params.cursor) : null;
    if (params.parentRunId !== undefined && !isRunId(params.parentRunId)) return { runs: [], nextCursor: null };
    const labels = params.labels && Object.keys(params.labels).length ? JSON.stringify(params.labels) : null;
    const { rows } = await this.query<rq.RunRow>(rq.runList({
      namespace: params.namespace, statuses: params.statuses?.length ? params.statuses : null,
      workflowName: params.workflowName ?? null, labels, parentRunId: params.parentRunId ?? null,
      after, limit: params.pageSize + 1,
    }));
    const runs = rows.slice(0, params.pageSize).map(rq.toRun);
    const last = runs[runs.length - 1];
    return { runs, nextCursor: rows.length > params.pageSize && last ? encodeRunCursor(last) : null };
  }

  async runLeaseAcquire(params: RunLeaseAcquireParams): Promise<Lease | null> {
    if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
    const { rows } = await this.query<rq.LeaseRow>(rq.runLeaseAcquire({
      runId: params.runId, holder: params.holder, ttlMs: params.ttlMs,
      statuses: params.statuses ?? ['PENDING', 'RUNNING'], namespace: params.namespace ?? null,
    }));
    if (rows[0]) return rq.toLease(rows[0]);
    await this.findRun(params.runId, params.namespace ?? null); // throws RunNotFoundError
    return null;
  }

  async runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
    if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
    const { rows } = await this.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runLeaseAcquireRunning({
      runId: params.runId, holder: params.holder, ttlMs: params.ttlMs,
      statuses: params.statuses ?? ['PENDING', 'RUNNING'], namespace: params.namespace ?? null,
    }), { runId: params.runId });
    if (rows[0]) return rq.takenOf(rows[0]);
    await this.findRun(params.runId, params.namespace ?? null); // throws RunNotFoundError
    return null;
  }

  async runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease> {
    if (!isRunId(params.lease.runId)) throw new RunNotFoundError(params.lease.runId);
    const { rows } = await this.query<rq.LeaseRow>(rq.runLeaseRenew(params.lease, params.ttlMs), {}, this.leasePool);
    if (rows[0]) return rq.toLease(rows[0]);
    throw await this.fenceFailure(params.lease, 0, this.leasePool) ?? new LeaseLostError(params.lease.runId, params.lease.epoch);
  }

  async runLeaseRelease(params: RunLeaseReleaseParams): Promise<void> {
    if (!isRunId(params.lease.runId)) return;
    await this.query(rq.runLeaseRelease(params.lease), {}, this.leasePool);
  }

  async runClaim(params: RunClaimParams): Promise<Lease[]> {
    if (params.limit <= 0) return [];
    const serves = params.serves ? servesJson(params.serves) : null;
    const { rows } = await this.query<rq.LeaseRow & { created_at: Date }>(rq.runClaim({
      holder: params.holder, ttlMs: params.ttlMs, limit: params.limit, namespace: params.namespace ?? null, serves, flows: params.flows ?? false,
    }));
    // UPDATE ... RETURNING has no order; hand runs out oldest first as the memory store does.
    rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1));
    return rows.map(rq.toLease);
  }

  async runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult> {
    assertStatusFits(params, this.limits);
    if (!isRunId(params.lease.runId)) throw new RunNotFoundError(params.lease.runId);
    const terminal = isTerminalStatus(params.status);
    const { rows } = await this.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runStatusSet({
      lease: params.lease, status: params.status,
      output: terminal ? jq.jsonParam(params.output) : null, error: terminal ? jq.jsonParam(params.error) : null,
    }), { runId: params.lease.runId });
    if (rows[0]) return { run: rq.toRun(rows[0].run), entry: jq.toEntry(rows[0].entry) };
    throw await this.fenceFailure(params.lease, 0) ?? new LeaseLostError(params.lease.runId, params.lease.epoch);
  }

  async runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
    assertForcedStatusFits(params, this.limits);
    if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
    const terminal = isTerminalStatus(params.status);
    const statement = rq.runStatusForce({
      runId: params.runId, namespace: params.namespace ?? null, status: params.status,
      output: terminal ? jq.jsonParam(params.output) : null, error: terminal ? jq.jsonParam(params.error) : null,
    });
    const { leader } = params;
    const { rows } = leader
      ? await this.transaction(async (client) => {
        await this.sweeperFence(client, leader);
        return client.query<{ run: rq.RunRow; entry: jq.JournalRow }>(statement);
      })
      : await this.query<{ run: rq.RunRow; entry: jq.JournalRow }>(statement);
    if (rows[0]) return { run: rq.toRun(rows[0].run), entry: jq.toEntry(rows[0].entry) };
    await this.findRun(params.runId, params.namespace ?? null); // not found, or terminal already
    return null;
  }

  async journalAppend(params: JournalAppendParams): Promise<JournalEntry[]> {
    assertEntriesFit(params.entries, this.limits);
    const deadlines = params.entries.map(suspensionDeadline);
    const { lease, entries } = params;
    if (!isRunId(lease.runId)) throw new RunNotFoundError(lease.runId);
    if (this.batcher && entries.length > 0) return this.batcher.append({ lease, entries, deadlines });
    return this.appendOne({ lease, entries, deadlines });
  }

  private async appendOne({ lease, entries, deadlines }: AppendRequest): Promise<JournalEntry[]> {
    const { runId, epoch } = lease;
    const maxEntries = this.limits.journalEntries;
    const query = entries.length === 1 && deadlines[0] === null
      ? jq.journalAppendSingle({ runId, epoch, entry: entries[0]!, maxEntries })
      : jq.journalAppend({ runId, epoch, entries, deadlines, maxEntries });
    const { rows } = await this.query<jq.AppendedRow>(query, { runId });
    const appended = jq.appendedEntries(rows[0]?.run_id ?? runId, entries, rows);
    if (appended) return appended;
    const failure = await this.fenceFailure(lease, entries.length);
    if (failure) throw failure;
    return [];
  }

  /**
   * Appends of several runs in one statement. A run its fence refused gets its own error, as
   * appendOne would give it. A statement the server rejected (a value Postgres cannot store in one
   * of the runs) was rolled back whole: each append is then sent on its own, so only the culprit fails.
   */
  private async appendBatch(batch: AppendRequest[]): Promise<(JournalEntry[] | { error: unknown })[]> {
    const settle = (r: AppendRequest) => this.appendOne(r).then((e) => e, (error: unknown) => ({ error }));
    if (batch.length === 1) return [await settle(batch[0]!)];
    let rows: jq.AppendedRow[];
    try {
      rows = (await this.pool.query<jq.AppendedRow>(jq.journalAppendMany({
        requests: batch.map((r) => ({ runId: r.lease.runId, epoch: r.lease.epoch, entries: r.entries, deadlines: r.deadlines })),
        maxEntries: this.limits.journalEntries,
      }))).rows;
    } catch (err) {
      if (sqlState(err) !== undefined && !isUnavailable(err)) return Promise.all(batch.map(settle));
      throw translatePgError(err, {});
    }
    const byRun = new Map<string, jq.AppendedRow[]>();
    for (const row of rows) {
      const got = byRun.get(row.run_id);
      if (got) got.push(row);
      else byRun.set(row.run_id, [row]);
    }
    return Promise.all(batch.map(async (r) => {
      const runId = r.lease.runId.toLowerCase();
      const appended = jq.appendedEntries(runId, r.entries, byRun.get(runId) ?? []);
      if (appended) return appended;
      const failure = await this.fenceFailure(r.lease, r.entries.length).catch((error: unknown) => error as Error);
      return failure ? { error: failure } : [];
    }));
  }

  async journalList(params: JournalListParams): Promise<JournalEntry[]> {
    if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
    const { rows } = await this.query<jq.JournalRow>(jq.journalList({
      runId: params.runId, afterSeq: params.afterSeq ?? -1, limit: params.limit ?? null, namespace: params.namespace ?? null,
    }));
    if (rows.length === 0) await this.findRun(params.runId, params.namespace ?? null);
    return rows.map(jq.toEntry);
  }

  async journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
    const ids = params.runIds.filter(isRunId);
    const totals = new Map<string, number>();
    if (ids.length === 0) return totals;
    const { rows } = await this.query<{ id: string; total: string }>(jq.journalCostTotals({ runIds: ids, namespace: params.namespace ?? null }));
    // Ids as the caller spelled them (the database returns them lowercase).
    const byLower = new Map(rows.map((r) => [r.id.toLowerCase(), Number(r.total)]));
    for (const id of ids) {
      const total = byLower.get(id.toLowerCase());
      if (total !== undefined) totals.set(id, total);
    }
    return totals;
  }

  async journalWaits(params: JournalWaitsParams): Promise<JournalWait[]> {
    await this.findRun(params.runId, params.namespace); // throws RunNotFoundError
    const { rows } = await this.query<{ entry: jq.JournalRow; referrers: jq.JournalRow[] }>(jq.journalWaits({ runId: params.runId, seq: params.seq ?? null }));
    return rows.map((row) => ({ entry: jq.toEntry(row.entry), referrers: row.referrers.map(jq.toEntry) }));
  }

  async journalSpend(params: JournalSpendParams): Promise<JournalSpendResult> {
    if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
    const { rows } = await this.query<{ runs: number; own: string; children: string; priced: number; reserved: string }>(jq.journalSpend(params));
    const row = rows[0];
    if (!row || row.runs === 0) throw new RunNotFoundError(params.runId);
    return { ownUsd: Number(row.own), childrenUsd: Number(row.children), pricedCalls: row.priced, reservedUsd: Number(row.reserved) };
  }

  /**
   * Under the run-row lock (FOR NO KEY UPDATE, the lock fenced writes take), in three statements:
   * lock, read the facts (a fresh READ COMMITTED snapshot that includes every resolution committed
   * before the lock was granted), write. test/conformance "applies one of many concurrent resolutions".
   */
  async journalResolve(params: JournalResolveParams): Promise<JournalResolveResult> {
    const { runId, suspensionSeq } = params;
    if (!isRunId(runId)) throw new RunNotFoundError(runId);
    assertEntriesFit([params.entry], this.limits, 'entry');
    return this.transaction(async (client) => {
      if (params.leader) await this.sweeperFence(client, params.leader);
      const locked = (await client.query<{ status: RunStatus; next_seq: number }>(rq.runLockForResolve(runId, params.namespace ?? null))).rows[0];
      if (!locked) throw new RunNotFoundError(runId);
      const facts = (await client.query<{ duplicate: jq.JournalRow | null; target_status: string | null; winner: jq.JournalRow | null }>(
        jq.journalResolveFacts({ runId, suspensionSeq, dedupeKey: params.entry.dedupeKey }))).rows[0]!;
      if (facts.duplicate) {
        const first = jq.toEntry(facts.duplicate);
        const winnerRow = first.refSeq === suspensionSeq ? facts.winner
          : first.refSeq === null ? null : (await client.query<jq.JournalRow>(jq.journalWinner({ runId, suspensionSeq: first.refSeq }))).rows[0];
        const winner = winnerRow ? jq.toEntry(winnerRow) : first;
        return { entry: first, applied: first.status === 'resolved', duplicate: true, winner };
      }
      if (isTerminalStatus(locked.status)) throw new RunStateError(runId, locked.status, 'not finished');
      if (facts.target_status !== 'suspended') throw notASuspension(runId, suspensionSeq);
      if (locked.next_seq + 1 > this.limits.journalEntries) throw new JournalFullError(runId, this.limits.journalEntries);
      const applied = facts.winner === null;
      const [row] = (await client.query<jq.JournalRow>(jq.journalResolveInsert({ runId, suspensionSeq, applied, entry: params.entry }))).rows;
      const entry = jq.toEntry(row!);
      return { entry, applied, duplicate: false, winner: applied ? entry : jq.toEntry(facts.winner!) };
    }, { runId });
  }

  async runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
    return this.recoverRuns(params, rq.runRecoverExpired(params));
  }

  async runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
    return this.recoverRuns(params, rq.runRecoverDeadSessions(params));
  }

  /** A sweeper recovery statement (expired leases, dead sessions): fenced by the leader, under the sweeper's lock timeout. */
  private async recoverRuns(params: { limit: number; leader?: RunRecoverExpiredParams['leader'] }, statement: pg.QueryConfig): Promise<RunRecoverExpiredResult> {
    if (params.limit <= 0) return { recovered: [], failed: [] };
    const rows = await this.transaction(async (client) => {
      await client.query(`SET LOCAL lock_timeout = ${Math.trunc(this.options.sweeperLockTimeoutMs ?? 500)}`);
      if (params.leader) await this.sweeperFence(client, params.leader);
      return (await client.query<{ id: string; status: RunStatus }>(statement)).rows;
    });
    return {
      recovered: rows.filter((r) => r.status === 'PENDING').map((r) => r.id),
      failed: rows.filter((r) => r.status === 'FAILED').map((r) => r.id),
    };
  }

  async leaseSessionOpen(params: LeaseSessionParams): Promise<void> {
    let session = this.leaseSessions.get(params.holder);
    if (!session) {
      session = new LeaseSession(params.holder, {
        client: this.sessionConfig('session'),
        onError: (err, message) => this.options.logger?.warn({ err, holder: params.holder }, message),
        minBackoffMs: this.options.listenerBackoffMs?.min, maxBackoffMs: this.options.listenerBackoffMs?.max,
      });
      this.leaseSessions.set(params.holder, session);
    }
    try {
      await session.open();
    } catch (err) {
      this.leaseSessions.delete(params.holder);
      await session.close();
      throw err;
    }
  }

  async leaseSessionClose(params: LeaseSessionParams): Promise<void> {
    const session = this.leaseSessions.get(params.holder);
    this.leaseSessions.delete(params.holder);
    await session?.close();
  }

  /** The backend pid of `holder`'s lease session (tests end it with pg_terminate_backend). */
  leaseSessionPid(holder: string): number | null {
    return this.leaseSessions.get(holder)?.pid ?? null;
  }

  /** Tests: `holder`'s session ends as a killed process's would (its registration stays, dead). */
  async leaseSessionEnd(holder: string): Promise<void> {
    const session = this.leaseSessions.get(holder);
    this.leaseSessions.delete(holder);
    await session?.abandon();
  }

  async suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]> {
    if (params.limit <= 0) return [];
    const { rows } = await this.query<jq.JournalRow>(suspensionListDue({ limit: params.limit, kinds: params.kinds?.length ? params.kinds : null }));
    return rows.map(jq.toEntry);
  }

  async runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]> {
    if (params.limit <= 0) return [];
    const { rows } = await this.query<rq.RunRow>(sq.runListEndedChildren(params));
    return rows.map(rq.toRun);
  }

  async runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]> {
    if (params.limit <= 0) return [];
    const { rows } = await this.query<rq.RunRow & { parent_status: RunStatus; parent_error: RunError | null }>(sq.runListOrphans(params));
    return rows.map((row) => ({ run: rq.toRun(row), parentStatus: row.parent_status, parentError: row.parent_error ?? null }));
  }

  async runListTimedOut(params: RunListTimedOutParams): Promise<Run[]> {
    if (params.limit <= 0) return [];
    const { rows } = await this.query<rq.RunRow>(sq.runListTimedOut(params));
    return rows.map(rq.toRun);
  }

  async runCountByStatus(): Promise<RunCountByStatusResult> {
    const counts: Record<RunStatus, number> = { PENDING: 0, RUNNING: 0, SUSPENDED: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 };
    const { rows } = await this.query<{ status: RunStatus; n: number }>(sq.runCountByStatus());
    for (const row of rows) counts[row.status] = row.n;
    return counts;
  }

  async sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
    const { rows } = await this.query<slq.SweeperLeaseRow>(slq.sweeperLeaseAcquire(params), {}, this.leasePool);
    return rows[0] ? toSweeperLease(rows[0]) : null;
  }

  async sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease> {
    const { holder, epoch } = params.lease;
    const { rows } = await this.query<slq.SweeperLeaseRow>(slq.sweeperLeaseRenew({ holder, epoch, ttlMs: params.ttlMs }), {}, this.leasePool);
    if (!rows[0]) throw new SweeperLeaseLostError(holder, epoch);
    return toSweeperLease(rows[0]);
  }

  async sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void> {
    await this.query(slq.sweeperLeaseRelease(params.lease), {}, this.leasePool);
  }

  async wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe> {
    return this.listener.subscribe(params);
  }

  async suspensionList(params: SuspensionListParams): Promise<SuspensionListResult> {
    return signals.suspensionList(this.access(), params);
  }

  async suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
    return signals.suspensionOpenOldest(this.access(), params);
  }

  async signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult> {
    return signals.signalDeliver(this.access(), params);
  }

  async signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]> {
    return signals.signalInboxList(this.access(), params);
  }

  async signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
    return signals.signalInboxConsume(this.access(), params);
  }

  /** The helpers signals-ops.ts runs on. */
  private access(): signals.PgAccess {
    return {
      limits: this.limits,
      query: (query) => this.query(query),
      transaction: (fn, runId) => this.transaction(fn, { runId }),
      findRun: (runId, namespace) => this.findRun(runId, namespace),
      fenceFailure: (lease) => this.fenceFailure(lease, 0),
    };
  }

  async webhookEndpointCreate(params: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
    return webhooks.webhookEndpointCreate((q) => this.query(q), params);
  }

  async webhookEndpointList(params: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
    return webhooks.webhookEndpointList((q) => this.query(q), params);
  }

  async webhookEndpointDelete(params: WebhookEndpointDeleteParams): Promise<void> {
    return webhooks.webhookEndpointDelete((q) => this.query(q), params);
  }

  async webhookEndpointRotate(params: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
    return webhooks.webhookEndpointRotate((q) => this.query(q), params);
  }

  async webhookDeliveryClaim(params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
    return webhooks.webhookDeliveryClaim((q) => this.query(q), params);
  }

  async webhookDeliveryComplete(params: WebhookDeliveryCompleteParams): Promise<boolean> {
    return webhooks.webhookDeliveryComplete((q) => this.query(q), params);
  }

  async webhookDeliveryList(params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
    return webhooks.webhookDeliveryList((q) => this.query(q), params);
  }

  async webhookDeliveryRedeliver(params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
    return webhooks.webhookDeliveryRedeliver((q) => this.query(q), params);
  }

  async replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void> {
    await this.query(repq.replicaHeartbeat(params));
  }

  async replicaRemove(params: { replicaId: string }): Promise<void> {
    await this.query(repq.replicaRemove(params.replicaId));
  }

  async replicaList(): Promise<ReplicaInfo[]> {
    return (await this.query<repq.ReplicaRow>(repq.replicaListLive())).rows.map(repq.toReplica);
  }

  async runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]> {
    const { rows } = await this.query<{ id: string; namespace: string; workflow_name: string; workflow_digest: string; updated_at: Date }>(
      repq.runListUnroutable(params),
    );
    return rows.map((r) => ({ runId: r.id, namespace: r.namespace, workflowName: r.workflow_name, workflowDigest: r.workflow_digest, pendingSince: r.updated_at }));
  }

  async workerHeartbeat(params: WorkerHeartbeatParams): Promise<boolean> {
    return remote.workerHeartbeat(this.remoteAccess(), params);
  }

  async workerRemove(params: { namespace: string; workerId: string }): Promise<void> {
    await this.query(tq.workerRemove(params));
  }

  async remoteToolList(params: RemoteToolListParams): Promise<RemoteToolInfo[]> {
    return remote.remoteToolList(this.remoteAccess(), params);
  }

  async remoteTaskCreate(params: RemoteTaskCreateParams): Promise<RemoteTask> {
    return remote.remoteTaskCreate(this.remoteAccess(), params);
  }

  async remoteTaskClaim(params: RemoteTaskClaimParams): Promise<RemoteTask[]> {
    return remote.remoteTaskClaim(this.remoteAccess(), params);
  }

  async remoteTaskHeartbeat(params: RemoteTaskFence): Promise<RemoteTask | null> {
    return remote.remoteTaskHeartbeat(this.remoteAccess(), params);
  }

  async remoteTaskComplete(params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult> {
    return remote.remoteTaskComplete(this.remoteAccess(), params);
  }

  async remoteTaskRetry(params: RemoteTaskRetryParams): Promise<boolean> {
    return remote.remoteTaskRetry(this.remoteAccess(), params);
  }

  async remoteTaskList(params: RemoteTaskListParams): Promise<RemoteTask[]> {
    return remote.remoteTaskList(this.remoteAccess(), params.runId);
  }

  private remoteAccess(): remote.PgRemoteAccess {
    return {
      limits: this.limits,
      query: (q) => this.query(q),
      transaction: (fn, runId) => this.transaction(fn, runId === undefined ? {} : { runId }),
    };
  }

  async budgetLock(params: BudgetLockParams): Promise<BudgetLock> {
    return this.budgetLocks.acquire(params);
  }

  async apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
    return akq.toApiKey((await this.query<akq.ApiKeyRow>(akq.apiKeyInsert(params), { clientCertSha256: params.clientCertSha256 ?? null })).rows[0]!);
  }

  async apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
    const row = (await this.query<akq.ApiKeyRow>(akq.apiKeySelect(params.id))).rows[0];
    return row ? akq.toApiKey(row) : null;
  }

  async apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
    const row = (await this.query<akq.ApiKeyRow>(akq.apiKeySelectByClientCert(params.clientCertSha256))).rows[0];
    return row ? akq.toApiKey(row) : null;
  }

  async apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
    return (await this.query<akq.ApiKeyRow>(akq.apiKeyList(params))).rows.map(akq.toApiKey);
  }

  async apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
    const row = (await this.query<akq.ApiKeyRow>(akq.apiKeyRevoke(params.id))).rows[0];
    return row ? akq.toApiKey(row) : null;
  }

  async flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult> {
    // A concurrent registration of the same name took the version this one computed: try again
    // (it then finds that version, or the next number). Bounded: each retry means another writer won.
    for (let attempt = 1; ; attempt++) {
      try {
        const row = (await this.query<fq.FlowRow>(fq.flowInsertNext(params))).rows[0];
        if (row) return { flow: fq.toFlow(row), created: true };
        const latest = (await this.query<fq.FlowRow>(fq.flowSelect({ namespace: params.namespace, name: params.name, version: null }))).rows[0];
        if (latest && latest.digest === params.digest) return { flow: fq.toFlow(latest), created: false };
      } catch (err) {
        if (sqlState(err) !== '23505' || attempt >= 10) throw err;
      }
    }
  }

  async flowGet(params: FlowGetParams): Promise<FlowRecord | null> {
    const row = (await this.query<fq.FlowRow>(fq.flowSelect({ namespace: params.namespace, name: params.name, version: params.version ?? null }))).rows[0];
    return row ? fq.toFlow(row) : null;
  }

  async flowList(params: FlowListParams): Promise<FlowRecord[]> {
    return (await this.query<fq.FlowRow>(fq.flowListLatest(params.namespace))).rows.map(fq.toFlow);
  }

  async clockNow(): Promise<Date> {
    const { rows } = await this.query<{ now: Date }>({ name: 'store_clock_now', text: 'SELECT clock_timestamp() AS now' });
    return rows[0]!.now;
  }

  async close(): Promise<void> {
    this.closing ??= (async () => {
      await this.listener.close();
      await Promise.all([...this.leaseSessions.values()].map((session) => session.close()));
      this.leaseSessions.clear();
      await Promise.all([this.pool.end(), this.leasePool.end(), this.lockPool.end()]);
    })();
    return this.closing;
  }

  private async query<R extends pg.QueryResultRow>(
    query: pg.QueryConfig, context: ErrorContext = {}, pool: pg.Pool = this.pool,
  ): Promise<pg.QueryResult<R>> {
    try {
      return await pool.query<R>(query);
    } catch (err) {
      throw translatePgError(err, context);
    }
  }

  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>, context: ErrorContext = {}): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw translatePgError(err, context);
    }
    let broken: Error | undefined;
    // pg-pool stops listening for errors on a checked-out client; a backend killed between our
    // statements would otherwise be an uncaught 'error' event. Note it and discard the client.
    const onError = (err: Error) => {
      broken = err;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch((e: unknown) => {
        broken = e instanceof Error ? e : new Error(String(e)); // the connection is unusable: discard it
      });
      throw translatePgError(err, context);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }

  /** First statement of a fenced sweeper transaction (sweeper-leader-queries.ts says why it holds). */
  private async sweeperFence(client: pg.PoolClient, lease: SweeperLease): Promise<void> {
    const { rows } = await client.query(slq.sweeperFence(lease));
    if (rows.length === 0) throw new SweeperLeaseLostError(lease.holder, lease.epoch);
  }

  private async findRun(runId: string, namespace: string | null): Promise<Run> {
    if (!isRunId(runId)) throw new RunNotFoundError(runId);
    const row = (await this.query<rq.RunRow>(rq.runGet(runId, namespace))).rows[0];
    if (!row) throw new RunNotFoundError(runId);
    return rq.toRun(row);
  }

  /**
   * Why a fenced statement matched nothing: no run, a lost lease, or (for an append of `adding`
   * entries) a full journal. Null when none applies (an empty append on a live lease).
   */
  private async fenceFailure(lease: Lease, adding: number, pool: pg.Pool = this.pool): Promise<Error | null> {
    const state = (await this.query<{ lease_epoch: string; held: boolean; next_seq: number }>(jq.journalFenceState(lease.runId), {}, pool)).rows[0];
    if (!state) return new RunNotFoundError(lease.runId);
    if (Number(state.lease_epoch) !== lease.epoch || !state.held) return new LeaseLostError(lease.runId, lease.epoch);
    if (adding > 0 && state.next_seq + adding > this.limits.journalEntries) {
      return new JournalFullError(lease.runId, this.limits.journalEntries);
    }
    return null;
  }
}

function toSweeperLease(row: slq.SweeperLeaseRow): SweeperLease {
  return { holder: row.holder, epoch: Number(row.epoch), expiresAt: new Date(row.expires_at) };
}

/** A claimer's `serves` as the claim statement's jsonb parameter, built once per list (an executor passes the same one on every claim). */
const servesParams = new WeakMap<object, string>();
function servesJson(serves: NonNullable<RunClaimParams['serves']>): string {
  let json = servesParams.get(serves);
  if (json === undefined) {
    json = JSON.stringify(serves.map((w) => ({ name: w.name, digest: w.digest })));
    servesParams.set(serves, json);
  }
  return json;
}
