import {
  IdempotencyConflictError, JournalFullError, LeaseLostError, RunNotFoundError, RunStateError,
} from '../../journal/errors.js';
import type { JournalEntry, NewJournalEntry } from '../../journal/journal-entry.js';
import { DEFAULT_LIMITS, type Limits } from '../../journal/limits.js';
import { isTerminalStatus, type Json, type Lease, type Run, type RunError, type RunStatus } from '../../journal/run.js';
import { assertPageSize, decodeRunCursor, encodeRunCursor } from '../run-cursor.js';
import { newRunId } from '../run-id.js';
import type { JournalStore, RunCreateParams, RunListParams } from '../store.js';
import { duplicateDedupeKey, notASuspension } from '../store-errors.js';
import {
  assertEntriesFit, assertRunCreateFits, assertStatusFits, statusEntry, suspensionDeadline,
} from '../write-checks.js';
import { MemoryWakeups } from './memory-wakeups.js';

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

  constructor(options: MemoryStoreOptions = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.clock = options.clock ?? (() => new Date());
  }

  async runCreate(params: RunCreateParams): Promise<{ run: Run; created: boolean; lease: Lease | null }> {
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
      createdAt: now,
      updatedAt: now,
    };
    this.runs.set(run.id, { run, entries: [], winners: new Map(), dedupe: new Map(), resumeRequested: false });
    if (key !== null) this.idempotency.set(key, run.id);
    this.wakeups.notify(run.id, run.status === 'PENDING');
    return { run: clone(run), created: true, lease: lease ? leaseOf(run) : null };
  }

  async runGet(params: { runId: string; namespace: string }): Promise<Run> {
    return clone(this.record(params.runId, params.namespace).run);
  }

  async runList(params: RunListParams): Promise<{ runs: Run[]; nextCursor: string | null }> {
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

  async runLeaseAcquire(params: {
    runId: string; holder: string; ttlMs: number; statuses?: RunStatus[]; namespace?: string;
  }): Promise<Lease | null> {
    const { run } = this.record(params.runId, params.namespace);
    const now = this.now();
    const statuses = params.statuses ?? ['PENDING', 'RUNNING'];
    if (!statuses.includes(run.status) || !leaseFreeAt(run, now)) return null;
    if (isTerminalStatus(run.status)) {
      run.output = null;
      run.error = null;
    }
    this.takeLease(run, params.holder, params.ttlMs, now);
    return leaseOf(run);
  }

  async runLeaseRenew(params: { lease: Lease; ttlMs: number }): Promise<Lease> {
    const { run } = this.fenced(params.lease);
    run.leaseExpiresAt = new Date(this.now().getTime() + params.ttlMs);
    return leaseOf(run);
  }

  async runLeaseRelease(params: { lease: Lease }): Promise<void> {
    const rec = this.runs.get(params.lease.runId);
    if (!rec || !holds(rec.run, params.lease)) return;
    this.dropLease(rec);
    if (rec.run.status === 'RUNNING') {
      rec.run.status = 'PENDING';
      this.wakeups.notify(rec.run.id, true);
    }
  }

  async runClaim(params: { holder: string; ttlMs: number; limit: number; namespace?: string }): Promise<Lease[]> {
    const now = this.now();
    const claimable = [...this.runs.values()]
      .map((r) => r.run)
      .filter((r) => r.status === 'PENDING' && leaseFreeAt(r, now) &&
        (params.namespace === undefined || r.namespace === params.namespace))
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || compare(a.id, b.id))
      .slice(0, Math.max(0, params.limit));
    return claimable.map((run) => {
      this.takeLease(run, params.holder, params.ttlMs, now);
      return leaseOf(run);
    });
  }

  async runStatusSet(params: {
    lease: Lease; status: RunStatus; output?: Json; error?: RunError;
  }): Promise<{ run: Run; entry: JournalEntry }> {
    assertStatusFits(params, this.limits);
    const rec = this.fenced(params.lease);
    const status = params.status === 'SUSPENDED' && rec.resumeRequested ? 'PENDING' : params.status;
    if (status !== 'RUNNING') this.dropLease(rec);
    return this.changeStatus(rec, status, params);
  }

  async runStatusForce(params: {
    runId: string; namespace?: string; status: RunStatus; output?: Json; error?: RunError;
  }): Promise<{ run: Run; entry: JournalEntry } | null> {
    if (params.status === 'RUNNING') {
      throw new TypeError('runStatusForce cannot set RUNNING: only a lease holder runs a run (runLeaseAcquire)');
    }
    assertStatusFits(params, this.limits);
    const rec = this.record(params.runId, params.namespace);
    if (isTerminalStatus(rec.run.status)) return null;
    rec.run.leaseEpoch += 1; // fences off the current holder, if any
    this.dropLease(rec);
    return this.changeStatus(rec, params.status, params);
  }

  async journalAppend(params: { lease: Lease; entries: NewJournalEntry[] }): Promise<JournalEntry[]> {
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
    this.wakeups.notify(rec.run.id, false);
    return written.map(clone);
  }

  async journalList(params: {
    runId: string; afterSeq?: number; limit?: number; namespace?: string;
  }): Promise<JournalEntry[]> {
    const rec = this.record(params.runId, params.namespace);
    const from = Math.max(0, (params.afterSeq ?? -1) + 1);
    const to = params.limit === undefined ? undefined : from + Math.max(0, params.limit);
    return rec.entries.slice(from, to).map(clone);
  }

  async journalResolve(params: {
    runId: string; namespace?: string; suspensionSeq: number; entry: NewJournalEntry;
  }): Promise<{ entry: JournalEntry; applied: boolean; duplicate: boolean; winner: JournalEntry }> {
    assertEntriesFit([params.entry], this.limits, 'entry');
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

  async runRecoverExpired(params: {
    limit: number; maxRecoveries: number; graceMs: number; failError: RunError;
  }): Promise<{ recovered: string[]; failed: string[] }> {
    const now = this.now().getTime();
    const expired = [...this.runs.values()]
      .filter(({ run }) => run.status === 'RUNNING' && run.leaseExpiresAt !== null &&
        run.leaseExpiresAt.getTime() < now && run.createdAt.getTime() <= now - params.graceMs)
      .sort((a, b) => a.run.leaseExpiresAt!.getTime() - b.run.leaseExpiresAt!.getTime())
      .slice(0, Math.max(0, params.limit));
    const recovered: string[] = [];
    const failed: string[] = [];
    for (const rec of expired) {
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
    return { recovered, failed };
  }

  async suspensionListDue(params: { limit: number; kinds?: string[] }): Promise<JournalEntry[]> {
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

  async wakeupSubscribe(params: {
    runId?: string; onRun?: (runId: string) => void; onPending?: () => void; onResync?: () => void;
  }): Promise<() => Promise<void>> {
    return this.wakeups.subscribe(params);
  }

  async clockNow(): Promise<Date> {
    return this.now();
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
