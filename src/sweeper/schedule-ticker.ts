import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { PayloadTooLargeError, StoreUnavailableError, SweeperLeaseLostError, UnstorableValueError } from '../journal/errors.js';
import type { Run } from '../journal/run.js';
import { Registry, RunEngine, schedulePass, type PassOutcome, type RunDefinition } from '../engine/index.js';
import type { ScheduleRecord } from '../journal/schedule.js';
import type { JournalStore } from '../store/store.js';
import { leaderFencedStore } from './leader-fenced-store.js';
import type { LeaderLease } from './leader-lease.js';

/*
 * The schedules' ticker (docs/schedules.md): while its sweeper leads, it looks at every schedule due
 * (the store's `due_at`, on the database clock), one pass each (engine schedulePass: overlap policy,
 * catch-up window, one fenced fire), then sleeps on an in-memory timer until the earliest schedule
 * due within `pollMs`, so a schedule ticking every second fires on its second, not at the next sweep.
 * The timer is only a wake-up: the schedule's row says what is due, so a ticker that dies, or a
 * leader that changes, loses nothing, and the new leader's first pass catches up (within each
 * schedule's catch-up window). Shape (STYLE habit 11): named defaults, start()/stop(), events.
 */

export interface ScheduleTickerOptions {
  store: JournalStore;
  leader: LeaderLease;
  holder: string;
  leaseTtlMs: number;
  logger: Logger;
  /** Longest sleep between looks (a schedule created elsewhere is seen within it). */
  pollMs?: number;
  /** How soon an open run a schedule must watch (buffered starts, pause on failure, budget) is looked at. */
  watchMs?: number;
  /** Schedules per look. */
  batchSize?: number;
  /** Schedules passed at once. */
  concurrency?: number;
  /** Runs one pass may start for one schedule. */
  maxStarts?: number;
}

export const SCHEDULE_TICKER_DEFAULTS = { pollMs: 1_000, watchMs: 1_000, batchSize: 500, concurrency: 8, maxStarts: 100 } as const;

export interface ScheduleTickerEvents {
  /** One look: the schedules passed and the runs started, each with its lateness (ms after its scheduled time). */
  look: [{ schedules: number; started: { run: Run; scheduleId: string; latenessMs: number }[] }];
  /** A look failed (the store is unavailable); the next one retries. Not `error`: an EventEmitter throws an `error` nobody hears. */
  failed: [{ error: unknown }];
}

export class ScheduleTicker {
  readonly events = new EventEmitter<ScheduleTickerEvents>();
  private readonly o: Required<Omit<ScheduleTickerOptions, 'store' | 'leader' | 'holder' | 'leaseTtlMs' | 'logger'>>;
  private readonly runs: RunEngine;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();
  private looking = false;
  private state: 'new' | 'running' | 'stopped' = 'new';

  constructor(private readonly options: ScheduleTickerOptions) {
    this.o = { ...SCHEDULE_TICKER_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as typeof this.o;
    for (const key of ['pollMs', 'watchMs', 'batchSize', 'concurrency', 'maxStarts'] as const) {
      if (!Number.isInteger(this.o[key]) || this.o[key] < 1) throw new RangeError(`${key} must be a whole number >= 1, got ${this.o[key]}`);
    }
    // An empty registry: the ticker starts runs for the replicas that serve them (routing), never executes one.
    this.runs = new RunEngine({ store: options.store, registry: new Registry({ builtinTools: false }), holder: options.holder, leaseTtlMs: options.leaseTtlMs });
    // A sweeper that just became leader looks at once: ticks missed while nobody led are caught up now.
    options.leader.events.on('acquired', () => this.wake(0));
  }

  start(): void {
    if (this.state !== 'new') throw new Error(`schedule ticker already ${this.state}`);
    this.state = 'running';
    this.wake(0);
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private wake(delayMs: number): void {
    if (this.state !== 'running') return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.looking) return; // the look in progress sets the next timer when it ends
      this.looking = true;
      this.running = this.lookOnce().then((next) => {
        this.looking = false;
        this.wake(next);
      }, (error: unknown) => {
        this.looking = false;
        this.options.logger.warn({ err: error }, 'schedule look failed; retrying');
        this.events.emit('failed', { error });
        this.wake(this.o.pollMs);
      });
    }, delayMs);
    this.timer.unref();
  }

  /**
   * One look, if this sweeper leads: every schedule due now gets its pass. Returns how long to
   * sleep: until the earliest schedule due within pollMs, else pollMs (0 after a full batch).
   */
  async lookOnce(): Promise<number> {
    const lease = this.options.leader.current;
    if (!lease) return this.o.pollMs;
    const store = leaderFencedStore(this.options.store, lease);
    try {
      const due = await store.scheduleListDue({ horizonMs: 0, limit: this.o.batchSize });
      const started: ScheduleTickerEvents['look'][0]['started'] = [];
      const deps = {
        store, runs: this.runs, leader: lease, logger: this.options.logger, watchMs: this.o.watchMs, maxStarts: this.o.maxStarts,
        definitions: new Map<string, Promise<RunDefinition>>(),
      };
      const queue = [...due.schedules];
      const worker = async () => {
        for (let s: ScheduleRecord | undefined; (s = queue.shift()) !== undefined;) {
          const outcome = await this.pass(deps, s, due.now);
          if (!outcome) continue;
          const done = new Date();
          for (const run of outcome.started) {
            const at = run.labels['waymark.scheduled_at'];
            started.push({ run, scheduleId: s.id, latenessMs: at ? done.getTime() - Date.parse(at) : 0 });
          }
          if (outcome.paused) this.options.logger.info({ schedule: s.id, namespace: s.namespace, note: outcome.paused }, 'schedule paused');
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.o.concurrency, queue.length) }, worker));
      if (started.length > 0) {
        this.options.logger.info({ started: started.map((s) => ({ schedule: s.scheduleId, runId: s.run.id, scheduledAt: s.run.labels['waymark.scheduled_at'] })) }, 'schedules started runs');
      }
      this.events.emit('look', { schedules: due.schedules.length, started });
      if (due.schedules.length >= this.o.batchSize) return 0;
      const soon = await store.scheduleListDue({ horizonMs: this.o.pollMs, limit: 1 });
      const first = soon.schedules[0]?.dueAt;
      return first ? Math.max(0, first.getTime() - soon.now.getTime()) : this.o.pollMs;
    } catch (error) {
      if (error instanceof SweeperLeaseLostError) {
        this.options.leader.markLost(lease);
        return this.o.pollMs;
      }
      throw error;
    }
  }

  /**
   * One schedule's pass, its failure kept to itself: a run that can never be stored (its input over
   * the payload limit, or text PostgreSQL cannot hold) pauses the schedule with a note, as an input
   * the workflow refuses does; another failure of that schedule alone is logged and looked at again
   * after pollMs. A lost lease or an unavailable store fails the whole look, as before.
   */
  private async pass(deps: Parameters<typeof schedulePass>[0], s: ScheduleRecord, now: Date): Promise<PassOutcome | null> {
    try {
      return await schedulePass(deps, s, now);
    } catch (error) {
      if (error instanceof SweeperLeaseLostError || error instanceof StoreUnavailableError) throw error;
      const unstorable = error instanceof PayloadTooLargeError || error instanceof UnstorableValueError;
      this.options.logger.warn({ err: error, schedule: s.id, namespace: s.namespace }, unstorable ? 'schedule paused: its run cannot be stored' : 'schedule pass failed; looking at it again later');
      const changes = unstorable
        ? { paused: true, note: `paused: its run cannot be stored: ${(error as Error).message}` }
        : { dueAt: new Date(now.getTime() + this.o.pollMs) };
      await deps.store.scheduleUpdate({ namespace: s.namespace, id: s.id, revision: s.revision, leader: deps.leader, changes }).catch((e: unknown) => {
        if (e instanceof SweeperLeaseLostError) throw e;
        return null; // the next look tries again
      });
      return null;
    }
  }
}
