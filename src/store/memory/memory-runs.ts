import { IdempotencyConflictError, RunNotFoundError } from '../../journal/errors.js';
import { isTerminalStatus, type Lease, type Run, type RunStatus } from '../../journal/run.js';
import { assertPageSize, decodeRunCursor, encodeRunCursor } from '../run-cursor.js';
import { newRunId } from '../run-id.js';
import { CONTINUE_LABELS, FORK_LABELS, continueKey } from '../../journal/fork-labels.js';
import type {
  RunContinueAsNewParams, RunContinueAsNewResult,
  ReplicaInfo, RunClaimParams, RunCountByStatusResult, RunCreateParams, RunForksParams, RunCreateResult, RunGetParams, RunLeaseAcquireParams,
  RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams, RunListParams, RunListResult, RunRouting,
  RunDigestSetParams, RunStatusForceParams, RunStatusForceResult, RunStatusSetParams, RunStatusSetResult,
} from '../store.js';
import { assertForcedStatusFits, assertRunCreateFits, assertStatusFits, driftEntry, statusEntry, suspensionDeadline } from '../write-checks.js';
import type { MemoryFlows } from './memory-flows.js';
import type { MemoryReplicas } from './memory-replicas.js';
import { clone, compare, holds, leaseFreeAt, leaseOf, type MemoryRunTable, type RunRecord } from './memory-run-table.js';

/* The memory store's runs and leases (RunOps in run-params.ts documents each method). */
export class MemoryRuns {
  constructor(private readonly t: MemoryRunTable, private readonly replicas: MemoryReplicas, private readonly flows: MemoryFlows) {
    t.routable = (run, routing) => this.routedTo(run, routing, this.replicas.live(this.t.now()));
  }

  /** runClaim's routing rule for one run (postgres: routedTo in runs-queries.ts); `live`: the live replicas. */
  private routedTo(run: Run, routing: { serves?: RunRouting['serves'] | undefined; flows?: boolean | undefined }, live: readonly ReplicaInfo[]): boolean {
    const { serves } = routing;
    return !serves || serves.some((w) => w.name === run.workflowName && (w.digest === run.workflowDigest || !digestServed(live, run))) ||
      (routing.flows === true && this.flows.isFlow(run.namespace, run.workflowName));
  }

  async runCreate(params: RunCreateParams): Promise<RunCreateResult> {
    return this.create(params);
  }

  async runContinueAsNew(params: RunContinueAsNewParams): Promise<RunContinueAsNewResult> {
    const rec = this.t.fenced(params.lease);
    const successor = {
      ...params.successor, namespace: rec.run.namespace, idempotencyKey: continueKey(rec.run.id),
      labels: { ...params.successor.labels, [CONTINUE_LABELS.from]: rec.run.id },
    };
    // All checks before any write, and no await between the writes: one atomic step.
    assertRunCreateFits(successor, this.t.limits);
    const { run: next } = this.create(successor);
    rec.run.labels = { ...rec.run.labels, [CONTINUE_LABELS.as]: next.id };
    this.t.dropLease(rec);
    return { ...this.t.changeStatus(rec, 'SUCCEEDED', { output: { continuedAsNew: next.id } }), successor: next };
  }

  /** runCreate's work, synchronous: runContinueAsNew creates and ends in one step. */
  private create(params: RunCreateParams): RunCreateResult {
    const sizes = assertRunCreateFits(params, this.t.limits);
    const key = params.idempotencyKey ? `${params.namespace}\u0000${params.idempotencyKey}` : null;
    const existingId = key === null ? undefined : this.t.idempotency.get(key);
    if (existingId !== undefined) {
      const existing = this.t.runs.get(existingId)!.run;
      if (existing.workflowName !== params.workflowName) {
        throw new IdempotencyConflictError(params.idempotencyKey!, existing.id);
      }
      return { run: clone(existing), created: false, lease: null };
    }
    if (params.parentRunId && !this.t.runs.has(params.parentRunId)) throw new RunNotFoundError(params.parentRunId);
    const now = this.t.now();
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
      journalBytes: 0,
      recoveryCount: 0,
      deadlineAt: params.timeoutMs === undefined || params.timeoutMs === null ? null : new Date(now.getTime() + params.timeoutMs),
      createdAt: now,
      updatedAt: now,
    };
    const rec: RunRecord = { run, entries: [], winners: new Map(), dedupe: new Map(), resumeRequested: false, inbox: [] };
    this.t.runs.set(run.id, rec);
    if (lease?.recordRunning) this.t.write(rec, [statusEntry('RUNNING')]);
    if (params.journal?.length) {
      params.journal.forEach(suspensionDeadline); // refuses a malformed deadline, as journalAppend does
      rec.run.journalBytes = sizes.reduce((a, b) => a + b, 0);
      for (const e of this.t.write(rec, params.journal)) {
        // A resolution among them won its wait (the Postgres store's unique winner index says the same).
        if (e.status === 'resolved' && e.refSeq !== null && !rec.winners.has(e.refSeq)) rec.winners.set(e.refSeq, e.seq);
      }
    }
    if (key !== null) this.t.idempotency.set(key, run.id);
    this.t.wakeups.notify(run.id, run.status === 'PENDING');
    return { run: clone(run), created: true, lease: lease ? leaseOf(run) : null };
  }
  async runForks(params: RunForksParams): Promise<string[]> {
    return [...this.t.runs.values()].map((r) => r.run)
      .filter((r) => r.namespace === params.namespace && r.labels[FORK_LABELS.source] === params.runId)
      .sort(newestFirst).slice(0, Math.max(0, params.limit)).map((r) => r.id);
  }
  async runGet(params: RunGetParams): Promise<Run> {
    return clone(this.t.record(params.runId, params.namespace).run);
  }
  async runList(params: RunListParams): Promise<RunListResult> {
    assertPageSize(params.pageSize);
    const after = params.cursor ? decodeRunCursor(params.cursor) : null;
    const labels = Object.entries(params.labels ?? {});
    const matching = [...this.t.runs.values()]
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
    return this.t.acquire(params)?.lease ?? null;
  }
  async runLeaseAcquireRunning(params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
    const taken = this.t.acquire(params);
    if (!taken) return null;
    // In the same synchronous step as the take: nothing else reaches the run in between.
    const { run, entry } = this.t.changeStatus(taken.rec, 'RUNNING', {});
    return { lease: taken.lease, run, entry };
  }
  async runLeaseRenew(params: RunLeaseRenewParams): Promise<Lease> {
    const { run } = this.t.fenced(params.lease);
    run.leaseExpiresAt = new Date(this.t.now().getTime() + params.ttlMs);
    return leaseOf(run);
  }
  async runLeaseRelease(params: RunLeaseReleaseParams): Promise<void> {
    const rec = this.t.runs.get(params.lease.runId);
    if (!rec || !holds(rec.run, params.lease)) return;
    this.t.dropLease(rec);
    if (rec.run.status === 'RUNNING') {
      rec.run.status = 'PENDING';
      this.t.wakeups.notify(rec.run.id, true);
    }
  }
  async runClaim(params: RunClaimParams): Promise<Lease[]> {
    const now = this.t.now();
    const { serves } = params;
    const live = serves ? this.replicas.live(now) : [];
    const claimable = [...this.t.runs.values()]
      .map((r) => r.run)
      .filter((r) => r.status === 'PENDING' && leaseFreeAt(r, now) &&
        (params.namespace === undefined || r.namespace === params.namespace) && this.routedTo(r, params, live))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compare(a.id, b.id))
      .slice(0, Math.max(0, params.limit));
    return claimable.map((run) => {
      this.t.takeLease(run, params.holder, params.ttlMs, now);
      return leaseOf(run);
    });
  }
  async runStatusSet(params: RunStatusSetParams): Promise<RunStatusSetResult> {
    assertStatusFits(params, this.t.limits);
    const rec = this.t.fenced(params.lease);
    const status = params.status === 'SUSPENDED' && rec.resumeRequested ? 'PENDING' : params.status;
    if (status !== 'RUNNING') this.t.dropLease(rec);
    return this.t.changeStatus(rec, status, params);
  }
  async runDigestSet(params: RunDigestSetParams): Promise<RunStatusSetResult> {
    const rec = this.t.fenced(params.lease);
    rec.run.workflowDigest = params.drift.to;
    const [entry] = this.t.write(rec, [driftEntry(params.drift)]);
    this.t.wakeups.notify(rec.run.id, false);
    return { run: clone(rec.run), entry: clone(entry!) };
  }
  async runStatusForce(params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
    assertForcedStatusFits(params, this.t.limits);
    this.t.sweeperFence(params.leader);
    const rec = this.t.record(params.runId, params.namespace);
    if (isTerminalStatus(rec.run.status)) return null;
    rec.run.leaseEpoch += 1; // fences off the current holder, if any
    this.t.dropLease(rec);
    return this.t.changeStatus(rec, params.status, params);
  }
  async runCountByStatus(): Promise<RunCountByStatusResult> {
    const counts: Record<RunStatus, number> = { PENDING: 0, RUNNING: 0, SUSPENDED: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 };
    for (const { run } of this.t.runs.values()) counts[run.status] += 1;
    return counts;
  }}

function newestFirst(a: { createdAt: Date; id: string }, b: { createdAt: Date; id: string }): number {
  return b.createdAt.getTime() - a.createdAt.getTime() || compare(b.id, a.id);
}

/** Whether one of the `live` replicas serves the run's exact digest (then only such replicas claim it). */
function digestServed(live: readonly ReplicaInfo[], run: Run): boolean {
  return live.some((rep) => rep.workflows.some((w) => w.name === run.workflowName && w.digest === run.workflowDigest));
}
