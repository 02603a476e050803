import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { SweeperLeaseLostError } from '../journal/errors.js';
import type { RunError } from '../journal/run.js';
import { PARENT_TIMED_OUT, RecoveryOperations } from '../engine/index.js';
import type { JournalStore, SweeperLease, UnroutableRun } from '../store/store.js';
import { DeadlineAlarm } from './deadline-alarm.js';
import { leaderFencedStore } from './leader-fenced-store.js';
import { LeaderLease } from './leader-lease.js';
import { sweepDeltas } from './delta-retention.js';
import { checkedRetention, purgeExpired, RETENTION_DEFAULTS, type RetentionPolicy } from './retention-duty.js';
import { ScheduleTicker, type ScheduleTickerOptions } from './schedule-ticker.js';

/*
 * The recovery loop of one store (DESIGN "Sweeper duties"). Several may run; the leader lease makes
 * exactly one act, and every write it makes carries the lease's epoch (leader-fenced-store.ts). Each
 * duty is also safe without the lease: claims use SKIP LOCKED and resolutions are deduplicated,
 * so leadership saves work and keeps figures honest rather than being the only guard.
 * Shape (STYLE habit 11): named defaults validated here, start()/stop() that drain, events.
 */

export interface SweeperOptions {
  store: JournalStore;
  /** Unique per process (host:pid): the leader lease's holder. */
  holder: string;
  intervalMs?: number;
  /**
   * How often the leader looks for runs whose holder's lease session ended (a killed replica) and
   * reclaims them at once (docs/recovery.md "Dead sessions"): one statement over a table of one
   * row per replica. 0 turns the check off between sweeps (each sweep still does it).
   */
  sessionCheckMs?: number;
  /** Leader lease TTL; a dead leader is replaced after at most this plus one renewal period. */
  leaderTtlMs?: number;
  /** A run younger than this (or a child/parent that ended more recently) is left alone. */
  graceMs?: number;
  /** Rows per statement; a sweep repeats a duty while full batches come back. */
  batchSize?: number;
  /** Bound on batches per duty per sweep, so one sweep cannot run unbounded. */
  maxBatches?: number;
  /** Recoveries of one run before it is failed as Interrupted. */
  maxRecoveries?: number;
  /** A run PENDING this long that no live replica can execute is reported (routing). */
  unroutableAfterMs?: number;
  /** Which finished runs are deleted and when (retention-duty.ts); default: 30 days everywhere. */
  retention?: RetentionPolicy;
  deltaRetentionMs?: number; // model call deltas are deleted this long after they were stored (docs/agents.md "Token streams")
  schedules?: Pick<ScheduleTickerOptions, 'pollMs' | 'watchMs' | 'batchSize' | 'concurrency' | 'maxStarts'> | false; // the schedules' ticker (schedule-ticker.ts) while this sweeper leads
  logger?: Logger;
}

export const SWEEPER_DEFAULTS = {
  intervalMs: 5_000, sessionCheckMs: 50, leaderTtlMs: 30_000, graceMs: 30_000, batchSize: 100, maxBatches: 50, maxRecoveries: 3, unroutableAfterMs: 60_000, deltaRetentionMs: 3_600_000,
} as const;

export const INTERRUPTED_RECOVERY: RunError = {
  name: 'Interrupted', reason: 'interrupted',
  message: 'Interrupted: the run was ready to continue, but every attempt to resume it failed',
};
export const INTERRUPTED_PARENT_ENDED: RunError = {
  name: 'Interrupted', reason: 'interrupted', message: 'Interrupted: its parent run had ended',
};
const PARENT_CANCELLED: RunError = { name: 'RunCancelledError', reason: 'cancelled', message: 'its parent run was cancelled' };

/** Why a run's lease was taken back: it expired, or its holder's lease session ended. */
export type RecoveryKind = 'expired_lease' | 'dead_session';

/** What one sweep did. `leader` false: another sweeper leads and this one did nothing. */
export interface SweepReport {
  leader: boolean;
  epoch: number | null;
  /** Expired leases, and leases of holders whose session ended, made claimable again. */
  recovered: string[];
  /** Runs failed as Interrupted after maxRecoveries. */
  failed: string[];
  /** `recovered` and `failed` by kind: a lease that expired, or a holder whose lease session ended (a killed replica). */
  byKind: Record<RecoveryKind, { recovered: string[]; failed: string[] }>;
  /** Runs failed with RunTimedOutError: their deadline passed (duty 0, run timeouts). */
  timedOut: string[];
  /** Unfinished children of those runs, cancelled with them. */
  timedOutChildrenCancelled: number;
  /** Approval and signal deadlines resolved with their defaults. */
  timeouts: number;
  sleeps: number;
  /** Parents whose wait on an ended child was resolved here. */
  parentsWoken: number;
  childrenCancelled: number;
  childrenFailed: number;
  /** PENDING runs no live replica can execute (duty 5, routing); reported, never failed. */
  unroutable: UnroutableRun[];
  /** Finished runs deleted by retention (duty 6), and their journal entries. */
  purged: number; purgedEntries: number;
  deltasDeleted: number; // model call deltas past their retention, deleted (duty 7)
  durationMs: number;
  /** The leadership ended mid-sweep (a fenced write was refused). */
  fenced: boolean;
}

export interface SweeperEvents {
  sweep: [SweepReport];
  /** The deadline alarm ran the deadline duties alone (run timeouts, due deadlines and sleeps) between sweeps. */
  deadlines: [SweepReport];
  /** Runs of dead lease sessions recovered between sweeps (checkSessionsOnce). */
  reclaimed: [{ recovered: string[]; failed: string[] }];
  elected: [SweeperLease];
  demoted: [];
  /** A sweep failed (database unavailable); the next tick retries. Not `error`, which an EventEmitter throws when nobody listens. */
  failed: [{ error: unknown }];
  stopped: [];
}

interface Loop { timer: NodeJS.Timeout | null; done: Promise<unknown> } // a repeating duty: its pending timer and the run in flight
export class Sweeper {
  readonly events = new EventEmitter<SweeperEvents>();
  readonly holder: string;
  readonly intervalMs: number;
  readonly sessionCheckMs: number;
  readonly graceMs: number;
  readonly batchSize: number;
  readonly maxBatches: number;
  readonly maxRecoveries: number;
  readonly unroutableAfterMs: number;
  readonly deltaRetentionMs: number;
  readonly leaderTtlMs: number;
  readonly retention: RetentionPolicy;
  readonly leader: LeaderLease;
  readonly schedules: ScheduleTicker | null; // null: turned off (SweeperOptions.schedules false)
  private readonly reportedUnroutable = new Set<string>(); // logged once each while it stays unroutable
  private readonly store: JournalStore;
  private readonly logger: Logger;
  /** The sweep loop and the session-check loop, while running. */
  private loops: Loop[] = [];
  private readonly alarm: DeadlineAlarm;
  private state: 'new' | 'running' | 'stopped' = 'new';

  constructor(options: SweeperOptions) {
    const o = { ...SWEEPER_DEFAULTS, ...definedOnly(options) };
    for (const key of ['intervalMs', 'leaderTtlMs', 'batchSize', 'maxBatches'] as const) {
      if (!Number.isInteger(o[key]) || o[key] < 1) throw new RangeError(`${key} must be a whole number >= 1, got ${o[key]}`);
    }
    for (const key of ['graceMs', 'maxRecoveries', 'unroutableAfterMs', 'sessionCheckMs', 'deltaRetentionMs'] as const) {
      if (!Number.isInteger(o[key]) || o[key] < 0) throw new RangeError(`${key} must be a whole number >= 0, got ${o[key]}`);
    }
    this.store = options.store;
    this.holder = options.holder;
    this.intervalMs = o.intervalMs;
    this.sessionCheckMs = o.sessionCheckMs;
    this.graceMs = o.graceMs;
    this.batchSize = o.batchSize;
    this.maxBatches = o.maxBatches;
    this.maxRecoveries = o.maxRecoveries;
    this.unroutableAfterMs = o.unroutableAfterMs;
    this.deltaRetentionMs = o.deltaRetentionMs;
    this.leaderTtlMs = o.leaderTtlMs;
    this.retention = checkedRetention(options.retention ?? RETENTION_DEFAULTS);
    this.logger = (options.logger ?? pino({ enabled: false })).child({ component: 'sweeper' });
    this.leader = new LeaderLease({ store: this.store, holder: this.holder, ttlMs: o.leaderTtlMs, logger: this.logger });
    this.leader.events.on('acquired', (lease) => this.events.emit('elected', lease));
    this.leader.events.on('lost', () => this.events.emit('demoted'));
    // Twice the interval: a deadline that falls while the next pass runs already has its timer.
    const leading = (): boolean => this.leader.current !== null;
    this.alarm = new DeadlineAlarm({ store: this.store, withinMs: 2 * this.intervalMs, leading, fire: () => this.deadlinesOnce(), logger: this.logger });
    this.schedules = options.schedules === false ? null : new ScheduleTicker({ ...options.schedules, store: this.store, leader: this.leader, holder: this.holder, leaseTtlMs: o.leaderTtlMs, logger: this.logger });
  }

  /** Sweeps at once, then every intervalMs (the next sweep starts intervalMs after one ends). */
  start(): void {
    if (this.state !== 'new') throw new Error(`sweeper already ${this.state}`);
    this.state = 'running';
    this.leader.start();
    this.logger.info({ holder: this.holder, intervalMs: this.intervalMs, sessionCheckMs: this.sessionCheckMs, graceMs: this.graceMs }, 'sweeper started');
    this.loops.push(this.every(this.intervalMs, () => this.sweepOnce().finally(() => this.alarm.rearm()), true));
    if (this.sessionCheckMs > 0) this.loops.push(this.every(this.sessionCheckMs, () => this.checkSessionsOnce(), false));
    this.schedules?.start();
  }

  /** Runs `work` (at once when `now`, else after `everyMs`), then `everyMs` after each run ended, while the sweeper runs. */
  private every(everyMs: number, work: () => Promise<unknown>, now: boolean): Loop {
    const loop: Loop = { timer: null, done: Promise.resolve() };
    const schedule = (): void => void (loop.timer = setTimeout(tick, everyMs)).unref();
    const tick = (): void => {
      loop.done = work().catch(() => undefined).finally(() => {
        if (this.state === 'running') schedule();
      });
    };
    if (now) tick();
    else schedule();
    return loop;
  }

  /** Finishes the sweep in progress, then releases leadership so another sweeper takes over at once. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    for (const loop of this.loops) if (loop.timer) clearTimeout(loop.timer);
    await Promise.all([...this.loops.map((loop) => loop.done), this.alarm.stop(), this.schedules?.stop()]);
    await this.leader.stop();
    this.events.emit('stopped');
  }

  /**
   * Between sweeps, the leader's dead-session reclaim alone (the sweep's duty 1 does it too): runs
   * of a replica that was killed continue elsewhere within about this interval, not at their
   * lease's expiry. Does nothing unless this sweeper already leads. Returns the runs it recovered.
   */
  async checkSessionsOnce(): Promise<string[]> {
    const lease = this.leader.current;
    if (!lease) return [];
    try {
      const r = await leaderFencedStore(this.store, lease).runRecoverDeadSessions({
        limit: this.batchSize, maxRecoveries: this.maxRecoveries, failError: INTERRUPTED_RECOVERY,
      });
      if (r.recovered.length + r.failed.length > 0) {
        // The same line a sweep logs when it acts (tests and operators count recoveries from it).
        this.logger.info({ epoch: lease.epoch, recovered: r.recovered, failed: r.failed, deadSessions: { recovered: r.recovered, failed: r.failed } }, 'sweep acted');
        this.events.emit('reclaimed', r);
      }
      return [...r.recovered, ...r.failed];
    } catch (error) {
      if (error instanceof SweeperLeaseLostError) this.leader.markLost(lease);
      else this.logger.warn({ err: error }, 'dead-session check failed; retrying at the next check');
      return [];
    }
  }

  /** One pass over every duty, if this sweeper leads (tests call it directly). */
  sweepOnce(): Promise<SweepReport> {
    return this.pass('sweep', (p) => this.duties(p));
  }

  /**
   * Duties 0, 2 and 3 alone (run timeouts, due deadlines and sleeps), if this sweeper already
   * leads: what the deadline alarm runs when a deadline passes between sweeps.
   */
  deadlinesOnce(): Promise<SweepReport> {
    return this.pass('deadlines', async (p) => {
      await this.timeoutDuty(p);
      await this.deadlineDuty(p);
    });
  }

  private async pass(kind: 'sweep' | 'deadlines', duties: (p: Pass) => Promise<void>): Promise<SweepReport> {
    const started = performance.now();
    const report: SweepReport = {
      leader: false, epoch: null, recovered: [], failed: [], byKind: { expired_lease: { recovered: [], failed: [] }, dead_session: { recovered: [], failed: [] } }, timedOut: [], timedOutChildrenCancelled: 0, timeouts: 0, sleeps: 0,
      parentsWoken: 0, childrenCancelled: 0, childrenFailed: 0, unroutable: [], purged: 0, purgedEntries: 0, deltasDeleted: 0, durationMs: 0, fenced: false,
    };
    const lease = this.leader.current ?? (kind === 'sweep' ? await this.leader.tryAcquire() : null);
    if (lease) {
      report.leader = true;
      report.epoch = lease.epoch;
      try {
        const store = leaderFencedStore(this.store, lease);
        const engine = new RecoveryOperations({ store, holder: this.holder, leaseTtlMs: this.leaderTtlMs, logger: this.logger });
        await duties({ store, engine, report });
      } catch (error) {
        if (error instanceof SweeperLeaseLostError) {
          report.fenced = true;
          this.leader.markLost(lease);
        } else {
          report.durationMs = performance.now() - started;
          this.logger.warn({ err: error }, 'sweep failed; retrying at the next tick');
          this.events.emit('failed', { error });
          throw error;
        }
      }
    }
    report.durationMs = performance.now() - started;
    const acted = report.recovered.length + report.failed.length + report.timedOut.length + report.timedOutChildrenCancelled + report.timeouts + report.sleeps +
      report.parentsWoken + report.childrenCancelled + report.childrenFailed + report.purged;
    if (acted > 0 || report.fenced) {
      this.logger.info({
        epoch: report.epoch, recovered: report.recovered, failed: report.failed,
        expiredLeases: report.byKind.expired_lease, deadSessions: report.byKind.dead_session, timedOut: report.timedOut,
        timedOutChildrenCancelled: report.timedOutChildrenCancelled, timeouts: report.timeouts, sleeps: report.sleeps,
        parentsWoken: report.parentsWoken, childrenCancelled: report.childrenCancelled, childrenFailed: report.childrenFailed,
        purged: report.purged, purgedEntries: report.purgedEntries, fenced: report.fenced, durationMs: Math.round(report.durationMs),
      }, kind === 'sweep' ? 'sweep acted' : 'deadline alarm acted');
    }
    this.events.emit(kind, report);
    return report;
  }

  private async duties(p: Pass): Promise<void> {
    const { store, engine, report } = p;
    const { batchSize: limit, graceMs } = this;
    await this.timeoutDuty(p);
    // 1. Leases of holders whose session ended (a killed replica), then expired leases: claimable
    // again, or failed after maxRecoveries.
    await this.batches(async () => {
      const r = await store.runRecoverDeadSessions({ limit, maxRecoveries: this.maxRecoveries, failError: INTERRUPTED_RECOVERY });
      report.recovered.push(...r.recovered);
      report.failed.push(...r.failed);
      report.byKind.dead_session.recovered.push(...r.recovered);
      report.byKind.dead_session.failed.push(...r.failed);
      return r.recovered.length + r.failed.length;
    });
    await this.batches(async () => {
      // A lease that expired before the database had been up for the grace period (the lease TTL by
      // default) was cut off by a restart: its recovery does not count (docs/recovery.md "Database outages").
      const r = await store.runRecoverExpired({ limit, maxRecoveries: this.maxRecoveries, graceMs, outageGraceMs: graceMs, failError: INTERRUPTED_RECOVERY });
      report.recovered.push(...r.recovered);
      report.failed.push(...r.failed);
      report.byKind.expired_lease.recovered.push(...r.recovered);
      report.byKind.expired_lease.failed.push(...r.failed);
      return r.recovered.length + r.failed.length;
    });
    await this.deadlineDuty(p);
    // 4a. Parents waiting on a child that ended (the engine's own wake-up was lost in a crash).
    await this.batches(async () => {
      const children = await store.runListEndedChildren({ limit, graceMs });
      for (const child of children) {
        const result = await engine.childResolveParent(child);
        if (result?.applied) report.parentsWoken++;
      }
      return children.length;
    });
    // 4b. Children whose parent ended: cancelled with a cancelled or timed-out parent (the timeout
    // duty cancels them at once; this catches a child it left behind), failed otherwise. Their own
    // children become orphans in turn and are handled by the next batch or sweep.
    await this.batches(async () => {
      const orphans = await store.runListOrphans({ limit, graceMs });
      for (const { run, parentStatus, parentError } of orphans) {
        const timedOut = parentStatus === 'FAILED' && parentError?.reason === 'run_timed_out';
        const cancel = parentStatus === 'CANCELLED' || timedOut;
        const forced = await store.runStatusForce({
          runId: run.id, status: cancel ? 'CANCELLED' : 'FAILED', error: timedOut ? PARENT_TIMED_OUT : cancel ? PARENT_CANCELLED : INTERRUPTED_PARENT_ENDED,
        });
        if (forced && cancel) report.childrenCancelled++;
        else if (forced) report.childrenFailed++;
      }
      return orphans.length;
    });
    // 5. Routing: runs nobody can execute (no live replica serves their workflow, or the digest a
    // strict-drift run is pinned to). Reported (metric, one log line per run), never failed: a
    // replica that serves them may come back, and then claims them.
    report.unroutable = await store.runListUnroutable({ olderThanMs: this.unroutableAfterMs, limit });
    const now = new Set(report.unroutable.map((r) => r.runId));
    for (const id of this.reportedUnroutable) if (!now.has(id)) this.reportedUnroutable.delete(id);
    for (const r of report.unroutable) {
      if (this.reportedUnroutable.has(r.runId)) continue;
      this.reportedUnroutable.add(r.runId);
      this.logger.warn({
        runId: r.runId, namespace: r.namespace, workflow: r.workflowName, digest: r.workflowDigest, pendingSince: r.pendingSince,
      }, 'run waits for a replica that serves its workflow: no live replica can execute it (start one that serves it, or cancel the run)');
    }
    // 6. Retention, last: a slow purge delays no recovery; a failed batch waits for the next sweep.
    ({ purged: report.purged, entries: report.purgedEntries } = await purgeExpired(store, this.retention, this.maxBatches, this.logger));
    report.deltasDeleted = await sweepDeltas({ store, retentionMs: this.deltaRetentionMs, limit: this.batchSize * 10, maxBatches: this.maxBatches });
  }

  /**
   * 0. Run timeouts: runs past their deadline (the run row, database clock) fail with
   * RunTimedOutError and their unfinished children are cancelled. First in a sweep, so a run both
   * expired and past its deadline is failed rather than recovered. The forced status fences any holder.
   */
  private async timeoutDuty({ store, engine, report }: Pass): Promise<void> {
    const limit = this.batchSize;
    await this.batches(async () => {
      const due = await store.runListTimedOut({ limit });
      for (const run of due) {
        const { timedOut, cancelled } = await engine.runTimeOut(run);
        if (timedOut) {
          report.timedOut.push(run.id);
          this.logger.info({ runId: run.id, namespace: run.namespace, workflow: run.workflowName, deadline: run.deadlineAt }, 'run timed out: failed with RunTimedOutError');
        }
        report.timedOutChildrenCancelled += cancelled.length;
      }
      return due.length;
    });
  }

  /** 2 and 3. Due deadlines and sleeps: their timeout resolution; the run becomes claimable. */
  private async deadlineDuty({ engine, report }: Pass): Promise<void> {
    await this.batches(async () => {
      const { resolved } = await engine.suspensionsResolveDue({ limit: this.batchSize });
      for (const r of resolved) {
        if (!r.applied) continue;
        if (r.kind === 'sleep') report.sleeps++;
        else report.timeouts++;
      }
      return resolved.length;
    });
  }

  /** Repeats `batch` while it reports a full batch, up to maxBatches. */
  private async batches(batch: () => Promise<number>): Promise<void> {
    for (let i = 0; i < this.maxBatches; i++) {
      if ((await batch()) < this.batchSize) return;
    }
  }
}

/** One pass's leader-fenced store, the engine operations acting through it, and what it did. */
type Pass = { store: JournalStore; engine: RecoveryOperations; report: SweepReport };

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
