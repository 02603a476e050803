import type { JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type Run, type RunError } from '../../journal/run.js';
import type {
  DeadlineNext,
  LeaseSessionParams, OrphanedRun, RunListEndedChildrenParams, RunListOrphansParams, RunListTimedOutParams,
  RunRecoverDeadSessionsParams, RunRecoverExpiredParams, RunRecoverExpiredResult, SuspensionListDueParams, SweeperLease,
  SweeperLeaseAcquireParams, SweeperLeaseReleaseParams, SweeperLeaseRenewParams,
} from '../store.js';
import { suspensionDeadline } from '../write-checks.js';
import { clone, compare, type MemoryRunTable, type RunRecord } from './memory-run-table.js';

/*
 * The memory store's sweeper side: recoveries, lease sessions, due deadlines, the parent/child and
 * timeout scans, the leader lease (SweeperOps in sweeper-params.ts documents each method).
 */
export class MemorySweeper {
  /**
   * Lease sessions by holder: true while open, false once ended. In one process a holder cannot
   * outlive the store, so only leaseSessionEnd (tests) ends one; the reclaim follows the same rules
   * as PostgreSQL's (test/conformance/lease-sessions.conformance.ts).
   */
  private readonly leaseSessions = new Map<string, boolean>();

  constructor(private readonly t: MemoryRunTable) {}

  async runRecoverExpired(params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
    this.t.sweeperFence(params.leader);
    const now = this.t.now().getTime();
    const expired = [...this.t.runs.values()]
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
    this.t.dropLease(rec);
    if (rec.run.recoveryCount >= params.maxRecoveries) {
      this.t.changeStatus(rec, 'FAILED', { error: params.failError });
      failed.push(rec.run.id);
    } else {
      rec.run.recoveryCount += 1;
      rec.run.status = 'PENDING';
      rec.run.updatedAt = this.t.now();
      this.t.wakeups.notify(rec.run.id, true);
      recovered.push(rec.run.id);
    }
  }
  async runRecoverDeadSessions(params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
    this.t.sweeperFence(params.leader);
    const dead = new Set([...this.leaseSessions].filter(([, open]) => !open).map(([holder]) => holder));
    const taken = [...this.t.runs.values()]
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
    const now = this.t.now().getTime();
    const due: { at: number; entry: JournalEntry }[] = [];
    for (const rec of this.t.runs.values()) {
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
  async deadlineNext(): Promise<DeadlineNext> {
    const now = this.t.now();
    let at = Number.POSITIVE_INFINITY;
    for (const rec of this.t.runs.values()) {
      if (isTerminalStatus(rec.run.status)) continue;
      const runAt = rec.run.deadlineAt?.getTime();
      if (runAt !== undefined && runAt > now.getTime()) at = Math.min(at, runAt);
      for (const entry of rec.entries) {
        const due = suspensionDeadline(entry)?.getTime();
        if (due !== undefined && due > now.getTime() && !rec.winners.has(entry.seq)) at = Math.min(at, due);
      }
    }
    return { at: Number.isFinite(at) ? new Date(at) : null, now };
  }
  async runListEndedChildren(params: RunListEndedChildrenParams): Promise<Run[]> {
    const before = this.t.now().getTime() - params.graceMs;
    return [...this.t.runs.values()]
      .filter(({ run }) => {
        if (!isTerminalStatus(run.status) || run.parentRunId === null || run.parentSeq === null) return false;
        const parent = this.t.runs.get(run.parentRunId);
        return parent !== undefined && !isTerminalStatus(parent.run.status) && !parent.winners.has(run.parentSeq) &&
          run.updatedAt.getTime() <= before;
      })
      .map(({ run }) => run)
      .sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || compare(a.id, b.id))
      .slice(0, Math.max(0, params.limit))
      .map(clone);
  }
  async runListOrphans(params: RunListOrphansParams): Promise<OrphanedRun[]> {
    const before = this.t.now().getTime() - params.graceMs;
    const found: { run: Run; parent: Run }[] = [];
    for (const { run } of this.t.runs.values()) {
      if (isTerminalStatus(run.status) || run.parentRunId === null) continue;
      const parent = this.t.runs.get(run.parentRunId)?.run;
      if (parent && isTerminalStatus(parent.status) && parent.updatedAt.getTime() <= before) found.push({ run, parent });
    }
    return found
      .sort((a, b) => a.parent.updatedAt.getTime() - b.parent.updatedAt.getTime() || compare(a.run.id, b.run.id))
      .slice(0, Math.max(0, params.limit))
      .map(({ run, parent }) => ({ run: clone(run), parentStatus: parent.status, parentError: parent.error ? clone(parent.error) : null }));
  }
  async runListTimedOut(params: RunListTimedOutParams): Promise<Run[]> {
    const now = this.t.now().getTime();
    const due: { run: Run; deadline: number }[] = [];
    for (const { run } of this.t.runs.values()) {
      if (run.deadlineAt !== null && !isTerminalStatus(run.status) && run.deadlineAt.getTime() <= now) due.push({ run, deadline: run.deadlineAt.getTime() });
    }
    return due
      .sort((a, b) => a.deadline - b.deadline || compare(a.run.id, b.run.id))
      .slice(0, Math.max(0, params.limit))
      .map(({ run }) => clone(run));
  }
  async sweeperLeaseAcquire(params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
    const now = this.t.now();
    const l = this.t.leader;
    // Taken over when free, expired, or held by a holder whose lease session ended (as PostgreSQL's).
    const sessionEnded = l.holder !== null && this.leaseSessions.get(l.holder) === false;
    if (l.holder !== null && l.expiresAt !== null && l.expiresAt.getTime() >= now.getTime() && !sessionEnded) return null;
    l.epoch += 1;
    l.holder = params.holder;
    l.expiresAt = new Date(now.getTime() + params.ttlMs);
    return { holder: l.holder, epoch: l.epoch, expiresAt: new Date(l.expiresAt) };
  }
  async sweeperLeaseRenew(params: SweeperLeaseRenewParams): Promise<SweeperLease> {
    this.t.sweeperFence(params.lease);
    this.t.leader.expiresAt = new Date(this.t.now().getTime() + params.ttlMs);
    return { ...params.lease, expiresAt: new Date(this.t.leader.expiresAt) };
  }
  async sweeperLeaseRelease(params: SweeperLeaseReleaseParams): Promise<void> {
    const l = this.t.leader;
    if (l.epoch !== params.lease.epoch || l.holder !== params.lease.holder) return;
    l.holder = null;
    l.expiresAt = null;
  }}
