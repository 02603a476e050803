import {
  ClientCertificateTakenError, IdempotencyConflictError, JournalFullError, LeaseLostError, RunNotFoundError, RunStateError, SweeperLeaseLostError,
} from '../../journal/errors.js';
import type { JournalEntry, NewJournalEntry } from '../../journal/journal-entry.js';
import { DEFAULT_LIMITS, type Limits } from '../../journal/limits.js';
import { isTerminalStatus, type Json, type Lease, type Run, type RunError, type RunStatus } from '../../journal/run.js';
import { assertPageSize, decodeRunCursor, encodeRunCursor } from '../run-cursor.js';
import { newRunId } from '../run-id.js';
import { KeyedMutex } from '../keyed-mutex.js';
import type {
  ApiKeyCreateParams, ApiKeyGetByClientCertParams, ApiKeyGetParams, ApiKeyListParams, ApiKeyRecord, ApiKeyRevokeParams,
  FlowGetParams, FlowListParams, FlowRecord, FlowRegisterParams, FlowRegisterResult,
  BudgetLock, BudgetLockParams, BufferedSignal, ReplicaHeartbeatParams, ReplicaInfo, RunListUnroutableParams, UnroutableRun, JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalSpendParams, JournalSpendResult, JournalWait, JournalWaitsParams, JournalListParams,
  JournalResolveParams, JournalResolveResult, JournalStore, OrphanedRun, RunClaimParams, RunCountByStatusResult,
  RunCreateParams, RunCreateResult, RunGetParams, RunLeaseAcquireParams, RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams,
  RunListEndedChildrenParams, RunListOrphansParams, RunListParams, RunListTimedOutParams, RunListResult, RunRecoverExpiredParams, RunRecoverDeadSessionsParams, LeaseSessionParams,
  RunRecoverExpiredResult, RunStatusForceParams, RunStatusForceResult, RunStatusSetParams, RunStatusSetResult,
  SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams, SignalInboxConsumeResult,
  SignalInboxListParams, SuspensionListDueParams, SuspensionListParams, SuspensionListResult,
  SuspensionOpenOldestParams, SweeperLease, SweeperLeaseAcquireParams, SweeperLeaseReleaseParams,
  SweeperLeaseRenewParams, WakeupSubscribeParams, WakeupUnsubscribe,
} from '../store.js';
import { duplicateDedupeKey, notASuspension } from '../store-errors.js';
import {
  assertForcedStatusFits,
  assertEntriesFit, assertJsonStorable, assertRunCreateFits, assertStatusFits, assertStorableText, statusEntry, suspensionDeadline,
} from '../write-checks.js';
import { oldestOpenSuspension, openSignalWait, openSuspensions, suspensionPage } from './memory-signals.js';
import { MemoryWakeups } from './memory-wakeups.js';
import { MemoryFlows } from './memory-flows.js';
import { MemoryWebhooks } from './memory-webhooks.js';
import { MemoryRemoteTasks } from './memory-remote-tasks.js';
import type {
  WebhookClaim, WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams,
  WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams,
  WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams,
} from '../webhook-params.js';
import type {
  RemoteTask, RemoteTaskClaimParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams,
  RemoteTaskFence, RemoteTaskListParams, RemoteTaskRetryParams, RemoteToolInfo, RemoteToolListParams, WorkerHeartbeatParams,
} from '../remote-task-params.js';

export interface MemoryStoreOptions {
  limits?: Partial<Limits>;
  /** The store's clock (the "database clock" of leases and deadlines); tests move it. */
  clock?: () => Date;
}

interface RunRecord {
  run: Run;
  entries: JournalEntry[];
  /** suspension seq -> seq of its winning resolution */
  winners: Map<number, number>;
  /** dedupeKey -> seq of the entry that carried it first */
  dedupe: Map<string, number>;
  /** A resolution was applied while RUNNING: the next move to SUSPENDED becomes PENDING. */
  resumeRequested: boolean;
  /** Buffered signals, in arrival order (the signal inbox). */
  inbox: BufferedSignal[];
}

type StatusFields = { output?: Json | undefined; error?: RunError | undefined };

/**
 * The in-memory JournalStore: the reference semantics the Postgres store is held to by
 * test/conformance. Every method does all its work synchronously before its first await, so each
 * call is atomic just as a transaction under the run-row lock is. Values are cloned in and out so a
 * caller mutating an object cannot edit the journal behind the store's back.
 */
export class MemoryStore implements JournalStore {
  readonly limits: Limits;
  private readonly clock: () => Date;
  private readonly runs = new Map<string, RunRecord>();
  /** `${namespace}\u0000${idempotencyKey}` -> run id */
  private readonly idempotency = new Map<string, string>();
  private readonly wakeups = new MemoryWakeups();
  /** The sweeper leader lease row; the epoch survives releases, as in Postgres. */
  private readonly leader: { holder: string | null; expiresAt: Date | null; epoch: number } = { holder: null, expiresAt: null, epoch: 0 };
  /**
   * Lease sessions by holder: true while open, false once ended. In one process a holder cannot
   * outlive the store, so only leaseSessionEnd (tests) ends one; the reclaim follows the same rules
   * as PostgreSQL's (test/conformance/lease-sessions.conformance.ts).
   */
  private readonly leaseSessions = new Map<string, boolean>();

  constructor(options: MemoryStoreOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.clock = options.clock ?? (() => new Date());
  }

  async runCreate(params: RunCreateParams): Promise<RunCreateResult> {
    assertRunCreateFits(params, this.limits);
    const key = params.idempotencyKey ? `${params.namespace}\u0000${params.idempotencyKey}` : null;
    const existingId = key === null ? undefined : this.idempotency.get(key);
    if (existingId !== undefined) {
      const existing = this.runs.get(existingId)!.run;
      if (existing.workflowName !== params.workflowName) {
        throw new IdempotencyConflictError(params.idempotencyKey!, existing.id);
      }
      return { run: clone(existing), created: false, lease: null };
    }
    if (params.parentRunId && !this.runs.has(params.parentRunId)) throw new RunNotFoundError(params.parentRunId);
    const now = this.now();
    const lease = params.leaseFor;
    const run: Run = {
      id: newRunId(now.getTime()),
      namespace: params.namespace,
      workflowName: params.workflowName,
      workflowVersion: params.workflowVersion,
      workflowDigest: params.workflowDigest,
      status: lease ? 'RUNNING' : 'PENDING',
      input: clone(params.input),
      output: null,
      error: null,
      labels: clone(params.labels ?? {}),
      idempotencyKey: params.idempotencyKey ?? null,
      parentRunId: params.parentRunId ?? null,
      parentSeq: params.parentSeq ?? null,
      budgetUsd: params.budgetUsd ?? null,
      dryRun: params.dryRun ?? false,
      leaseHolder: lease ? lease.holder : null,
      leaseExpiresAt: lease ? new Date(now.getTime() + lease.ttlMs) : null,
      leaseEpoch: lease ? 1 : 0,
      nextSeq: 0,
      recoveryCount: 0,
      deadlineAt: params.timeoutMs === undefined || params.timeoutMs === null ? null : new Date(now.getTime() + params.timeoutMs),
      createdAt: now,
      updatedAt: now,
    };
    const rec: RunRecord = { run, entries: [], winners: new Map(), dedupe: new Map(), resumeRequested: false, inbox: [] };
    this.runs.set(run.id, rec);
    if (lease?.recordRunning) this.write(rec, [statusEntry('RUNNING')]);
    if (key !== null) this.idempotency.set(key, run.id);
    this.wakeups.notify(run.id, run.status === 'PENDING');
    return { run: clone(run), created: true, lease: lease ? leaseOf(run) : null };
  }

  async runGet(params: RunGetParams): Promise<Run> {
    return clone(this.record(params.runId, params.namespace).run);
  }

  async runList(params: RunListParams): Promise<RunListResult> {
    assertPageSize(params.pageSize);
    const after = params.cursor ? decodeRunCursor(params.cursor) : null;
    const labels = Object.entries(params.labels ?? {});
    const matching = [...this.runs.values()]
      .map((r) => r.run)
      .filter((r) =>
        r.namespace === params.namespace &&
        (!params.statuses?.length || params.statuses.includes(r.status)) &&
        (params.workflowName === undefined || r.workflowName === params.workflowName) &&
        (params.parentRunId === undefined || r.parentRunId === params.parentRunId) &&
        labels.every(([k, v]) => r.labels[k] === v) &&
        (after === null || newestFirst(r, after) > 0))
      .sort(newestFirst);
    const page = matching.slice(0, params.pageSize);
    const last = page[page.length - 1];
    const more = matching.length > params.pageSize && last !== undefined;
    return { runs: page.map(clone), nextCursor: more ? encodeRunCursor(last) : null };
  }

  async runLeaseAcquire(params: RunLeaseAcquireParams): Promise<Lease | null> {
    return this.acquire(params)?.lease ?? null;
  }

  async runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
    const taken = this.acquire(params);
    if (!taken) return null;
    // In the same synchronous step as the take: nothing else reaches the run in between.
    const { run, entry } = this.changeStatus(taken.rec, 'RUNNING', {});
    return { lease: taken.lease, run, entry };
  }

  private acquire(params: RunLeaseAcquireParams): { rec: RunRecord; lease: Lease } | null {
    const rec = this.record(params.runId, params.namespace);
    const { run } = rec;
    const now = this.now();
    const statuses = params.statuses ?? ['PENDING', 'RUNNING'];
    if (!statuses.includes(run.status) || !leaseFreeAt(run, now)) return null;
    if (isTerminalStatus(run.status)) {
      run.output = null;
      run.error = null;
    }
    this.takeLease(run, params.holder, params.ttlMs, now);
    return { rec, lease: leaseOf(run) };
  }

  async runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease> {
    const { run } = this.fenced(params.lease);
    run.leaseExpiresAt = new Date(this.now().getTime() + params.ttlMs);
    return leaseOf(run);
  }

  async runLeaseRelease(params: RunLeaseReleaseParams): Promise<void> {
    const rec = this.runs.get(params.lease.runId);
    if (!rec || !holds(rec.run, params.lease)) return;
    this.dropLease(rec);
    if (rec.run.status === 'RUNNING') {
      rec.run.status = 'PENDING';
      this.wakeups.notify(rec.run.id, true);
    }
  }

  async runClaim(params: RunClaimParams): Promise<Lease[]> {
    const now = this.now();
    const { serves } = params;
    const live = serves ? this.liveReplicas(now) : [];
    const claimable = [...this.runs.values()]
      .map((r) => r.run)
      .filter((r) => r.status === 'PENDING' && leaseFreeAt(r, now) &&
        (params.namespace === undefined || r.namespace === params.namespace) &&
        (!serves || serves.some((w) => w.name === r.workflowName && (w.digest === r.workflowDigest || !digestServed(live, r))) ||
          (params.flows === true && this.flows.isFlow(r.namespace, r.workflowName))))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compare(a.id, b.id))
      .slice(0, Math.max(0, params.limit));
    return claimable.map((run) => {
      this.takeLease(run, params.holder, params.ttlMs, now);
      return leaseOf(run);
    });
  }

  async runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult> {
    assertStatusFits(params, this.limits);
    const rec = this.fenced(params.lease);
    const status = params.status === 'SUSPENDED' && rec.resumeRequested ? 'PENDING' : params.status;
    if (status !== 'RUNNING') this.dropLease(rec);
    return this.changeStatus(rec, status, params);
  }

  async runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
    assertForcedStatusFits(params, this.limits);
    this.sweeperFence(params.leader);
    const rec = this.record(params.runId, params.namespace);
    if (isTerminalStatus(rec.run.status)) return null;
    rec.run.leaseEpoch += 1; // fences off the current holder, if any
    this.dropLease(rec);
    return this.changeStatus(rec, params.status, params);
  }

  async journalAppend(params: JournalAppendParams): Promise<JournalEntry[]> {
    assertEntriesFit(params.entries, this.limits);
    params.entries.forEach(suspensionDeadline); // refuses a malformed deadline before writing
    const rec = this.fenced(params.lease);
    if (rec.run.nextSeq + params.entries.length > this.limits.journalEntries) {
      throw new JournalFullError(rec.run.id, this.limits.journalEntries);
    }
    const seen = new Set<string>();
    for (const e of params.entries) {
      if (e.dedupeKey === null) continue;
      if (rec.dedupe.has(e.dedupeKey) || seen.has(e.dedupeKey)) throw duplicateDedupeKey(rec.run.id, e.dedupeKey);
      seen.add(e.dedupeKey);
    }
    const written = this.write(rec, params.entries);
    rec.run.recoveryCount = 0; // progress: the recoveries before it did not fail (store.ts runRecoverExpired)
    this.wakeups.notify(rec.run.id, false);
    return written.map(clone);
  }

  async journalList(params: JournalListParams): Promise<JournalEntry[]> {
    const rec = this.record(params.runId, params.namespace);
    const from = Math.max(0, (params.afterSeq ?? -1) + 1);
    const to = params.limit === undefined ? undefined : from + Math.max(0, params.limit);
    return rec.entries.slice(from, to).map(clone);
  }

  async journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
    const totals = new Map<string, number>();
    for (const runId of params.runIds) {
      const rec = this.runs.get(runId);
      if (!rec || (params.namespace !== undefined && rec.run.namespace !== params.namespace)) continue;
      totals.set(runId, rec.entries.reduce((sum, e) => sum + (e.costUsd ?? 0), 0));
    }
    return totals;
  }

  async journalWaits(params: JournalWaitsParams): Promise<JournalWait[]> {
    const rec = this.record(params.runId, params.namespace);
    return rec.entries
      .filter((e) => e.status === 'suspended' && (params.seq === undefined || e.seq === params.seq))
      .map((entry) => ({ entry: clone(entry), referrers: rec.entries.filter((e) => e.refSeq === entry.seq).map((e) => clone(e)) }));
  }

  async journalSpend(params: JournalSpendParams): Promise<JournalSpendResult> {
    const root = this.record(params.runId, params.namespace);
    const result: JournalSpendResult = { ownUsd: 0, childrenUsd: 0, pricedCalls: 0, reservedUsd: 0 };
    const visit = (rec: RunRecord, depth: number): void => {
      const open = new Map<number, number>();
      for (const e of rec.entries) {
        if (e.costUsd !== null) {
          if (rec === root) result.ownUsd += e.costUsd;
          else result.childrenUsd += e.costUsd;
          result.pricedCalls++;
        }
        const usd = (e.payload as { estimatedCostUsd?: unknown } | null)?.estimatedCostUsd;
        if (e.kind === 'model' && e.status === 'running' && typeof usd === 'number' && Number.isFinite(usd) && usd > 0) open.set(e.seq, usd);
        else if (e.refSeq !== null) open.delete(e.refSeq);
      }
      for (const usd of open.values()) result.reservedUsd += usd;
      if (depth >= params.maxDepth) return;
      for (const child of this.runs.values()) {
        if (child.run.parentRunId === rec.run.id && child.run.namespace === params.namespace) visit(child, depth + 1);
      }
    };
    visit(root, 0);
    return result;
  }

  async journalResolve(params: JournalResolveParams): Promise<JournalResolveResult> {
    assertEntriesFit([params.entry], this.limits, 'entry');
    this.sweeperFence(params.leader);
    const rec = this.record(params.runId, params.namespace);
    const key = params.entry.dedupeKey;
    const firstSeq = key === null ? undefined : rec.dedupe.get(key);
    if (firstSeq !== undefined) {
      const first = rec.entries[firstSeq]!;
      const winnerSeq = first.refSeq === null ? undefined : rec.winners.get(first.refSeq);
      const winner = winnerSeq === undefined ? first : rec.entries[winnerSeq]!;
      return { entry: clone(first), applied: first.status === 'resolved', duplicate: true, winner: clone(winner) };
    }
    const run = rec.run;
    if (isTerminalStatus(run.status)) throw new RunStateError(run.id, run.status, 'not finished');
    if (rec.entries[params.suspensionSeq]?.status !== 'suspended') {
      throw notASuspension(run.id, params.suspensionSeq);
    }
    if (run.nextSeq + 1 > this.limits.journalEntries) throw new JournalFullError(run.id, this.limits.journalEntries);
    const winnerSeq = rec.winners.get(params.suspensionSeq);
    const applied = winnerSeq === undefined;
    const [entry] = this.write(rec, [{
      ...params.entry, status: applied ? 'resolved' : 'noop', refSeq: params.suspensionSeq,
    }]);
    let becamePending = false;
    if (applied) {
      rec.winners.set(params.suspensionSeq, entry!.seq);
      if (run.status === 'SUSPENDED') {
        run.status = 'PENDING';
        becamePending = true;
      } else if (run.status === 'RUNNING') {
        rec.resumeRequested = true;
      }
    }
    this.wakeups.notify(run.id, becamePending);
    const winner = applied ? entry! : rec.entries[winnerSeq!]!;
    return { entry: clone(entry!), applied, duplicate: false, winner: clone(winner) };
  }

  async runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
    this.sweeperFence(params.leader);
    const now = this.now().getTime();
    const expired = [...this.runs.values()]
      .filter(({ run }) => run.status === 'RUNNING' && run.leaseExpiresAt !== null &&
        run.leaseExpiresAt.getTime() < now && run.createdAt.getTime() <= now - params.graceMs)
      .sort((a, b) => a.run.leaseExpiresAt!.getTime() - b.run.leaseExpiresAt!.getTime())
      .slice(0, Math.max(0, params.limit));
    const recovered: string[] = [];
    const failed: string[] = [];
    for (const rec of expired) this.recover(rec, params, recovered, failed);
    return { recovered, failed };
  }

  /** One recovery (expired lease or dead session): PENDING again, or FAILED after maxRecoveries. */
  private recover(rec: RunRecord, params: { maxRecoveries: number; failError: RunError }, recovered: string[], failed: string[]): void {
    rec.run.leaseEpoch += 1;
    this.dropLease(rec);
    if (rec.run.recoveryCount >= params.maxRecoveries) {
      this.changeStatus(rec, 'FAILED', { error: params.failError });
      failed.push(rec.run.id);
    } else {
      rec.run.recoveryCount += 1;
      rec.run.status = 'PENDING';
      rec.run.updatedAt = this.now();
      this.wakeups.notify(rec.run.id, true);
      recovered.push(rec.run.id);
    }
  }

  async runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
    this.sweeperFence(params.leader);
    const dead = new Set([...this.leaseSessions].filter(([, open]) => !open).map(([holder]) => holder));
    const taken = [...this.runs.values()]
      .filter(({ run }) => run.status === 'RUNNING' && run.leaseHolder !== null && dead.has(run.leaseHolder))
      .sort((a, b) => compare(a.run.id, b.run.id));
    const batch = taken.slice(0, Math.max(0, params.limit));
    if (taken.length === batch.length) for (const holder of dead) this.leaseSessions.delete(holder);
    const recovered: string[] = [];
    const failed: string[] = [];
    for (const rec of batch) this.recover(rec, params, recovered, failed);
    return { recovered, failed };
  }

  async leaseSessionOpen(params: LeaseSessionParams): Promise<void> {
    this.leaseSessions.set(params.holder, true);
  }

  async leaseSessionClose(params: LeaseSessionParams): Promise<void> {
    this.leaseSessions.delete(params.holder);
  }

  /** Tests: `holder`'s session ends as a killed process's would (its registration stays, dead). */
  async leaseSessionEnd(holder: string): Promise<void> {
    if (this.leaseSessions.has(holder)) this.leaseSessions.set(holder, false);
  }

  async suspensionListDue(params: SuspensionListDueParams): Promise<JournalEntry[]> {
    const now = this.now().getTime();
    const due: { at: number; entry: JournalEntry }[] = [];
    for (const rec of this.runs.values()) {
      if (isTerminalStatus(rec.run.status)) continue;
      for (const entry of rec.entries) {
        const at = suspensionDeadline(entry)?.getTime();
        if (at === undefined || at > now || rec.winners.has(entry.seq)) continue;
        if (params.kinds?.length && !params.kinds.includes(entry.kind)) continue;
        due.push({ at, entry });
      }
    }
    due.sort((a, b) => a.at - b.at || compare(a.entry.runId, b.entry.runId) || a.entry.seq - b.entry.seq);
    return due.slice(0, Math.max(0, params.limit)).map((d) => clone(d.entry));
  }

  async runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]> {
    const before = this.now().getTime() - params.graceMs;
    return [...this.runs.values()]
      .filter(({ run }) => {
        if (!isTerminalStatus(run.status) || run.parentRunId === null || run.parentSeq === null) return false;
        const parent = this.runs.get(run.parentRunId);
        return parent !== undefined && !isTerminalStatus(parent.run.status) && !parent.winners.has(run.parentSeq) &&
          run.updatedAt.getTime() <= before;
      })
      .map(({ run }) => run)
      .sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || compare(a.id, b.id))
      .slice(0, Math.max(0, params.limit))
      .map(clone);
  }

  async runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]> {
    const before = this.now().getTime() - params.graceMs;
    const found: { run: Run; parent: Run }[] = [];
    for (const { run } of this.runs.values()) {
      if (isTerminalStatus(run.status) || run.parentRunId === null) continue;
      const parent = this.runs.get(run.parentRunId)?.run;
      if (parent && isTerminalStatus(parent.status) && parent.updatedAt.getTime() <= before) found.push({ run, parent });
    }
    return found
      .sort((a, b) => a.parent.updatedAt.getTime() - b.parent.updatedAt.getTime() || compare(a.run.id, b.run.id))
      .slice(0, Math.max(0, params.limit))
      .map(({ run, parent }) => ({ run: clone(run), parentStatus: parent.status, parentError: parent.error ? clone(parent.error) : null }));
  }

  async runListTimedOut(params: RunListTimedOutParams): Promise<Run[]> {
    const now = this.now().getTime();
    const due: { run: Run; deadline: number }[] = [];
    for (const { run } of this.runs.values()) {
      if (run.deadlineAt !== null && !isTerminalStatus(run.status) && run.deadlineAt.getTime() <= now) due.push({ run, deadline: run.deadlineAt.getTime() });
    }
    return due
      .sort((a, b) => a.deadline - b.deadline || compare(a.run.id, b.run.id))
      .slice(0, Math.max(0, params.limit))
      .map(({ run }) => clone(run));
  }

  async runCountByStatus(): Promise<RunCountByStatusResult> {
    const counts: Record<RunStatus, number> = { PENDING: 0, RUNNING: 0, SUSPENDED: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 };
    for (const { run } of this.runs.values()) counts[run.status] += 1;
    return counts;
  }

  async sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
    const now = this.now();
    const l = this.leader;
    if (l.holder !== null && l.expiresAt !== null && l.expiresAt.getTime() >= now.getTime()) return null;
    l.epoch += 1;
    l.holder = params.holder;
    l.expiresAt = new Date(now.getTime() + params.ttlMs);
    return { holder: l.holder, epoch: l.epoch, expiresAt: new Date(l.expiresAt) };
  }

  async sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease> {
    this.sweeperFence(params.lease);
    this.leader.expiresAt = new Date(this.now().getTime() + params.ttlMs);
    return { ...params.lease, expiresAt: new Date(this.leader.expiresAt) };
  }

  async sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void> {
    const l = this.leader;
    if (l.epoch !== params.lease.epoch || l.holder !== params.lease.holder) return;
    l.holder = null;
    l.expiresAt = null;
  }

  async wakeupSubscribe(params: WakeupSubscribeParams): Promise<WakeupUnsubscribe> {
    return this.wakeups.subscribe(params);
  }

  async suspensionList(params: SuspensionListParams): Promise<SuspensionListResult> {
    const page = suspensionPage(this.runs.values(), params);
    return { items: page.items.map(clone), nextCursor: page.nextCursor };
  }

  async suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
    const entry = oldestOpenSuspension(this.record(params.runId, params.namespace), params.kind, params.name);
    return entry ? clone(entry) : null;
  }

  async signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult> {
    assertJsonStorable('payload', params.payload, this.limits.payloadBytes);
    assertStorableText('name', params.name);
    assertStorableText('signalId', params.signalId);
    if (params.target) assertEntriesFit([params.target.entry], this.limits, 'entry');
    const rec = this.record(params.runId, params.namespace);
    const firstSeq = rec.dedupe.get(params.dedupeKey);
    if (firstSeq !== undefined) {
      const first = rec.entries[firstSeq]!;
      const winnerSeq = first.refSeq === null ? undefined : rec.winners.get(first.refSeq);
      return { outcome: 'duplicate', entry: clone(first), winner: winnerSeq === undefined ? null : clone(rec.entries[winnerSeq]!), signal: null };
    }
    const queued = rec.inbox.find((s) => s.signalId === params.signalId);
    if (queued) return { outcome: 'duplicate', entry: null, winner: null, signal: clone(queued) };
    if (isTerminalStatus(rec.run.status)) throw new RunStateError(rec.run.id, rec.run.status, 'not finished');
    const open = openSignalWait(rec, params.name);
    if (open !== null && !rec.inbox.some((s) => s.name === params.name)) {
      if (params.target?.seq !== open) return { outcome: 'wait_open', seq: open };
      // journalResolve does all its work before its first await: the delivery stays one atomic step,
      // and so does the take that follows it synchronously (before anything else reaches the run).
      const resolving = this.journalResolve({
        runId: rec.run.id, suspensionSeq: open, entry: { ...params.target.entry, dedupeKey: params.dedupeKey },
      });
      let taken: RunLeaseAcquireRunningResult | null = null;
      if (params.leaseFor) {
        const lease = this.acquire({ runId: rec.run.id, holder: params.leaseFor.holder, ttlMs: params.leaseFor.ttlMs, statuses: ['PENDING'] });
        if (lease) taken = { lease: lease.lease, ...this.changeStatus(lease.rec, 'RUNNING', {}) };
      }
      const resolved = await resolving;
      return { outcome: 'resolved', entry: resolved.entry, ...(params.leaseFor ? { taken } : {}) };
    }
    const signal: BufferedSignal = {
      runId: rec.run.id, name: params.name, signalId: params.signalId, payload: clone(params.payload), createdAt: this.now(),
    };
    rec.inbox.push(signal);
    return { outcome: 'buffered', signal: clone(signal) };
  }

  async signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]> {
    const rec = this.record(params.runId, params.namespace);
    return rec.inbox.filter((s) => params.name === undefined || s.name === params.name).slice(0, params.limit).map(clone);
  }

  async signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
    assertEntriesFit([params.entry], this.limits, 'entry');
    const rec = this.fenced(params.lease);
    const at = rec.inbox.findIndex((s) => s.signalId === params.signalId);
    if (at < 0) return { entry: null, winner: null };
    const winnerSeq = rec.winners.get(params.suspensionSeq);
    if (winnerSeq !== undefined) return { entry: null, winner: clone(rec.entries[winnerSeq]!) };
    if (rec.entries[params.suspensionSeq]?.status !== 'suspended') throw notASuspension(rec.run.id, params.suspensionSeq);
    if (rec.run.nextSeq + 1 > this.limits.journalEntries) throw new JournalFullError(rec.run.id, this.limits.journalEntries);
    const [entry] = this.write(rec, [{ ...params.entry, status: params.valid ? 'resolved' : 'noop', refSeq: params.suspensionSeq }]);
    if (params.valid) rec.winners.set(params.suspensionSeq, entry!.seq);
    rec.inbox.splice(at, 1);
    this.wakeups.notify(rec.run.id, false);
    return { entry: clone(entry!), winner: params.valid ? clone(entry!) : null };
  }

  async clockNow(): Promise<Date> {
    return this.now();
  }

  private readonly flows = new MemoryFlows(() => this.now());

  async flowRegister(params: FlowRegisterParams): Promise<FlowRegisterResult> {
    return this.flows.flowRegister(params);
  }

  async flowGet(params: FlowGetParams): Promise<FlowRecord | null> {
    return this.flows.flowGet(params);
  }

  async flowList(params: FlowListParams): Promise<FlowRecord[]> {
    return this.flows.flowList(params);
  }

  private readonly apiKeys = new Map<string, ApiKeyRecord>();

  async apiKeyCreate(params: ApiKeyCreateParams): Promise<ApiKeyRecord> {
    if (this.apiKeys.has(params.id)) throw new Error(`API key id ${params.id} is taken`);
    const cert = params.clientCertSha256 ?? null;
    if (cert !== null && [...this.apiKeys.values()].some((k) => k.clientCertSha256 === cert)) throw new ClientCertificateTakenError(cert);
    const key: ApiKeyRecord = { ...structuredClone(params), clientCertSha256: cert, createdAt: this.now(), revokedAt: null };
    this.apiKeys.set(key.id, key);
    return structuredClone(key);
  }

  async apiKeyGet(params: ApiKeyGetParams): Promise<ApiKeyRecord | null> {
    const key = this.apiKeys.get(params.id);
    return key ? structuredClone(key) : null;
  }

  async apiKeyGetByClientCert(params: ApiKeyGetByClientCertParams): Promise<ApiKeyRecord | null> {
    const key = [...this.apiKeys.values()].find((k) => k.clientCertSha256 === params.clientCertSha256);
    return key ? structuredClone(key) : null;
  }

  async apiKeyList(params: ApiKeyListParams): Promise<ApiKeyRecord[]> {
    return [...this.apiKeys.values()]
      .filter((k) => (params.namespace === undefined || k.namespace === params.namespace) && (params.includeRevoked || k.revokedAt === null))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || compare(b.id, a.id))
      .map((k) => structuredClone(k));
  }

  async apiKeyRevoke(params: ApiKeyRevokeParams): Promise<ApiKeyRecord | null> {
    const key = this.apiKeys.get(params.id);
    if (!key) return null;
    key.revokedAt ??= this.now();
    return structuredClone(key);
  }

  private readonly replicas = new Map<string, ReplicaInfo>();

  async replicaHeartbeat(params: ReplicaHeartbeatParams): Promise<void> {
    const now = this.now();
    const startedAt = this.replicas.get(params.replicaId)?.startedAt ?? now;
    this.replicas.set(params.replicaId, {
      replicaId: params.replicaId, workflows: structuredClone(params.workflows), startedAt, heartbeatAt: now,
      expiresAt: new Date(now.getTime() + params.ttlMs),
    });
  }

  async replicaRemove(params: { replicaId: string }): Promise<void> {
    this.replicas.delete(params.replicaId);
  }

  async replicaList(): Promise<ReplicaInfo[]> {
    return this.liveReplicas(this.now()).map((r) => structuredClone(r));
  }

  async runListUnroutable(params: RunListUnroutableParams): Promise<UnroutableRun[]> {
    const now = this.now();
    const live = this.liveReplicas(now);
    return [...this.runs.values()].map((r) => r.run)
      .filter((r) => r.status === 'PENDING' && r.updatedAt.getTime() <= now.getTime() - params.olderThanMs &&
        !live.some((rep) => rep.workflows.some((w) => w.name === r.workflowName)) && !this.flows.isFlow(r.namespace, r.workflowName))
      .sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || compare(a.id, b.id))
      .slice(0, params.limit)
      .map((r) => ({ runId: r.id, namespace: r.namespace, workflowName: r.workflowName, workflowDigest: r.workflowDigest, pendingSince: r.updatedAt }));
  }

  private liveReplicas(now: Date): ReplicaInfo[] {
    return [...this.replicas.values()].filter((r) => r.expiresAt.getTime() > now.getTime())
      .sort((a, b) => b.startedAt.getTime() - a.startedAt.getTime() || compare(a.replicaId, b.replicaId));
  }


  /** Endpoints and the outbox; changeStatus writes the deliveries of a run that ended. */
  private readonly webhooks = new MemoryWebhooks(() => this.now());
  private readonly remote = new MemoryRemoteTasks({
    now: () => this.now(),
    runFacts: (runId) => this.runs.get(runId),
    resolve: (params) => this.journalResolve(params),
  });

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

  private readonly budgetLocks = new KeyedMutex();

  async budgetLock(params: BudgetLockParams): Promise<BudgetLock> {
    const release = await this.budgetLocks.acquire(`${params.namespace}\u0000${params.rootRunId}`);
    return { release: async () => release() };
  }

  async close(): Promise<void> {
    this.wakeups.clear();
  }

  /** Milliseconds, like Postgres timestamps rounded by the Postgres store: keeps cursors exact. */
  private now(): Date {
    return new Date(this.clock().getTime());
  }

  private record(runId: string, namespace: string | undefined): RunRecord {
    const rec = this.runs.get(runId);
    if (!rec || (namespace !== undefined && rec.run.namespace !== namespace)) throw new RunNotFoundError(runId);
    return rec;
  }

  /** The sweeper's fence: nothing when absent; SweeperLeaseLostError unless it is the current leader lease. */
  private sweeperFence(lease: SweeperLease | undefined): void {
    if (lease && (this.leader.epoch !== lease.epoch || this.leader.holder !== lease.holder)) {
      throw new SweeperLeaseLostError(lease.holder, lease.epoch);
    }
  }

  /** The fence: same epoch and the lease not released. Expiry is deliberately not checked (see store.ts). */
  private fenced(lease: Lease): RunRecord {
    const rec = this.runs.get(lease.runId);
    if (!rec) throw new RunNotFoundError(lease.runId);
    if (!holds(rec.run, lease)) throw new LeaseLostError(lease.runId, lease.epoch);
    return rec;
  }

  private takeLease(run: Run, holder: string, ttlMs: number, now: Date): void {
    run.leaseEpoch += 1;
    run.leaseHolder = holder;
    run.leaseExpiresAt = new Date(now.getTime() + ttlMs);
    run.status = 'RUNNING';
    run.updatedAt = now;
    this.runs.get(run.id)!.resumeRequested = false; // the new holder reads the journal after this
  }

  private dropLease(rec: RunRecord): void {
    rec.run.leaseHolder = null;
    rec.run.leaseExpiresAt = null;
    rec.resumeRequested = false;
    rec.run.updatedAt = this.now();
  }

  private changeStatus(rec: RunRecord, status: RunStatus, fields: StatusFields): { run: Run; entry: JournalEntry } {
    const terminal = isTerminalStatus(status);
    rec.run.status = status;
    rec.run.output = terminal && fields.output !== undefined ? clone(fields.output) : null;
    rec.run.error = terminal && fields.error !== undefined ? clone(fields.error) : null;
    rec.run.updatedAt = this.now();
    const [entry] = this.write(rec, [statusEntry(status, rec.run.output, rec.run.error)]);
    if (terminal) this.webhooks.runFinished(rec.run, entry!);
    if (status === 'SUSPENDED') this.webhooks.approvalsPending(rec.run, openSuspensions(rec, 'approval'));
    this.wakeups.notify(rec.run.id, status === 'PENDING');
    return { run: clone(rec.run), entry: clone(entry!) };
  }

  private write(rec: RunRecord, entries: readonly NewJournalEntry[]): JournalEntry[] {
    const createdAt = this.now();
    const written = entries.map((e) => {
      const entry: JournalEntry = { ...clone(e), runId: rec.run.id, seq: rec.run.nextSeq++, createdAt };
      rec.entries.push(entry);
      if (entry.dedupeKey !== null) rec.dedupe.set(entry.dedupeKey, entry.seq);
      return entry;
    });
    rec.run.updatedAt = createdAt;
    return written;
  }
}

function holds(run: Run, lease: Lease): boolean {
  return run.leaseEpoch === lease.epoch && run.leaseHolder !== null;
}

function leaseFreeAt(run: Run, now: Date): boolean {
  return run.leaseHolder === null || (run.leaseExpiresAt !== null && run.leaseExpiresAt.getTime() < now.getTime());
}

function leaseOf(run: Run): Lease {
  return { runId: run.id, holder: run.leaseHolder!, epoch: run.leaseEpoch, expiresAt: new Date(run.leaseExpiresAt!) };
}

function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || compare(b.id, a.id);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Whether one of the `live` replicas serves the run's exact digest (then only such replicas claim it). */
function digestServed(live: readonly ReplicaInfo[], run: Run): boolean {
  return live.some((rep) => rep.workflows.some((w) => w.name === run.workflowName && w.digest === run.workflowDigest));
}
