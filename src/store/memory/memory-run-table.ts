import { LeaseLostError, RunNotFoundError, SweeperLeaseLostError } from '../../journal/errors.js';
import type { JournalEntry, NewJournalEntry } from '../../journal/journal-entry.js';
import type { Limits } from '../../journal/limits.js';
import { isTerminalStatus, type Json, type Lease, type Run, type RunError, type RunStatus } from '../../journal/run.js';
import type { BufferedSignal, RunLeaseAcquireParams, RunRouting, SweeperLease } from '../store.js';
import { statusEntry } from '../write-checks.js';
import { openSuspensions } from './memory-signals.js';
import { MemoryWakeups } from './memory-wakeups.js';
import { MemoryWebhooks } from './memory-webhooks.js';

/*
 * The memory store's rows and the steps every area shares: looking a run up, the lease fence, taking
 * and dropping a lease, a status change with its journal entry and outbox rows, a journal write.
 * Each area (memory-runs.ts, memory-journal.ts, …) works on this one table, synchronously, so each
 * store call stays atomic as a transaction under the run-row lock is.
 */

/** One run with its journal and the indexes the store keeps of it. */
export interface RunRecord {
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

export class MemoryRunTable {
  readonly runs = new Map<string, RunRecord>();
  /** `${namespace}\u0000${idempotencyKey}` -> run id */
  readonly idempotency = new Map<string, string>();
  readonly wakeups = new MemoryWakeups();
  /** Endpoints and the outbox; changeStatus writes the deliveries of a run that ended. */
  readonly webhooks = new MemoryWebhooks(() => this.now());
  /** The sweeper leader lease row; the epoch survives releases, as in Postgres. */
  readonly leader: { holder: string | null; expiresAt: Date | null; epoch: number } = { holder: null, expiresAt: null, epoch: 0 };

  /** Whether a take with `routing` may take `run` (RunLeaseAcquireParams.routing); memory-runs.ts sets runClaim's rule. */
  routable: (run: Run, routing: RunRouting) => boolean = () => true;

  constructor(readonly limits: Limits, private readonly clock: () => Date) {}

  /** Milliseconds, like Postgres timestamps rounded by the Postgres store: keeps cursors exact. */
  now(): Date {
    return new Date(this.clock().getTime());
  }
  record(runId: string, namespace: string | undefined): RunRecord {
    const rec = this.runs.get(runId);
    if (!rec || (namespace !== undefined && rec.run.namespace !== namespace)) throw new RunNotFoundError(runId);
    return rec;
  }
  /** The sweeper's fence: nothing when absent; SweeperLeaseLostError unless it is the current leader lease. */
  sweeperFence(lease: SweeperLease | undefined): void {
    if (lease && (this.leader.epoch !== lease.epoch || this.leader.holder !== lease.holder)) {
      throw new SweeperLeaseLostError(lease.holder, lease.epoch);
    }
  }
  /** The fence: same epoch and the lease not released. Expiry is deliberately not checked (see store.ts). */
  fenced(lease: Lease): RunRecord {
    const rec = this.runs.get(lease.runId);
    if (!rec) throw new RunNotFoundError(lease.runId);
    if (!holds(rec.run, lease)) throw new LeaseLostError(lease.runId, lease.epoch);
    return rec;
  }
  acquire(params: RunLeaseAcquireParams): { rec: RunRecord; lease: Lease } | null {
    const rec = this.record(params.runId, params.namespace);
    const { run } = rec;
    const now = this.now();
    const statuses = params.statuses ?? ['PENDING', 'RUNNING'];
    if (!statuses.includes(run.status) || !leaseFreeAt(run, now)) return null;
    if (params.routing && !this.routable(run, params.routing)) return null;
    if (isTerminalStatus(run.status)) {
      run.output = null;
      run.error = null;
    }
    this.takeLease(run, params.holder, params.ttlMs, now);
    return { rec, lease: leaseOf(run) };
  }
  takeLease(run: Run, holder: string, ttlMs: number, now: Date): void {
    run.leaseEpoch += 1;
    run.leaseHolder = holder;
    run.leaseExpiresAt = new Date(now.getTime() + ttlMs);
    run.status = 'RUNNING';
    run.updatedAt = now;
    this.runs.get(run.id)!.resumeRequested = false; // the new holder reads the journal after this
  }
  dropLease(rec: RunRecord): void {
    rec.run.leaseHolder = null;
    rec.run.leaseExpiresAt = null;
    rec.resumeRequested = false;
    rec.run.updatedAt = this.now();
  }
  changeStatus(rec: RunRecord, status: RunStatus, fields: StatusFields): { run: Run; entry: JournalEntry } {
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
  write(rec: RunRecord, entries: readonly NewJournalEntry[]): JournalEntry[] {
    const createdAt = this.now();
    const written = entries.map((e) => {
      const entry: JournalEntry = { ...clone(e), runId: rec.run.id, seq: rec.run.nextSeq++, createdAt };
      rec.entries.push(entry);
      if (entry.dedupeKey !== null) rec.dedupe.set(entry.dedupeKey, entry.seq);
      return entry;
    });
    rec.run.updatedAt = createdAt;
    return written;
  }}

export function holds(run: Run, lease: Lease): boolean {
  return run.leaseEpoch === lease.epoch && run.leaseHolder !== null;
}

export function leaseFreeAt(run: Run, now: Date): boolean {
  return run.leaseHolder === null || (run.leaseExpiresAt !== null && run.leaseExpiresAt.getTime() < now.getTime());
}

export function leaseOf(run: Run): Lease {
  return { runId: run.id, holder: run.leaseHolder!, epoch: run.leaseEpoch, expiresAt: new Date(run.leaseExpiresAt!) };
}

export function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}
