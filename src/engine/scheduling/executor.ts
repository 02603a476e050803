// scheduling/: the executor loop of `waymark server`: claims PENDING runs and has the RunDriver execute them.
// Must not execute a run or touch its journal itself: RunDriver.execute does.
import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import type { Lease } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import type { RunDriver } from '../runtime/run-driver.js';
import type { ExecuteResult } from '../runtime/execute-result.js';
import { drainExecutions } from './drain.js';
import { LeaseLedger } from './lease-ledger.js';

/*
 * The executor loop of `waymark server`: claims PENDING runs and executes them, a bounded number at
 * a time per replica. It wakes on the store's `onPending` wake-up (NOTIFY) and also polls, because
 * a notification is lost while the listener is disconnected (reliability.md §2.6). The shape is
 * STYLE habit 11: named defaults validated at construction, start()/stop() that drain, events.
 */

export interface ExecutorOptions {
  /** Executes what this loop claims (RunEngine.driver). */
  driver: RunDriver;
  store: JournalStore;
  /** Lease holder recorded on claimed runs; default the driver's. Must be unique per process. */
  holder?: string;
  /** Runs executing at once on this replica. */
  concurrency?: number;
  /** Fallback poll period when no wake-up arrives. */
  pollMs?: number;
  /** Claim only runs of this namespace (default: every namespace). */
  namespace?: string;
  /**
   * On stop, after the grace period: how long executions still running, once aborted, get to
   * settle (their in-flight tool or model call to return) before their leases are left to expire.
   */
  settleMs?: number;
  logger?: Logger;
}

export const EXECUTOR_DEFAULTS = { concurrency: 16, pollMs: 1_000, settleMs: 2_000 } as const;

export interface ExecutorEvents {
  /** A run was claimed and is about to execute here. */
  claimed: [{ runId: string; lease: Lease }];
  /** An execution ended (any outcome; `result` null when the engine threw). */
  finished: [{ runId: string; result: ExecuteResult | null; error: unknown }];
  /** A claim pass found nothing to claim and nothing is executing. */
  idle: [];
  /** A claim failed (database unavailable); the next wake-up or poll retries. */
  'claim-failed': [{ error: unknown }];
  /**
   * stop() finished: `released` runs were aborted after the grace period, settled, and were handed
   * back as PENDING; `unsettled` ones were still touching the world, so their leases were kept to
   * expire (the sweeper recovers them).
   */
  stopped: [{ released: string[]; unsettled: string[] }];
}

export class Executor {
  readonly events = new EventEmitter<ExecutorEvents>();
  readonly holder: string;
  readonly concurrency: number;
  readonly pollMs: number;
  readonly settleMs: number;
  private readonly driver: RunDriver;
  private readonly store: JournalStore;
  private readonly namespace: string | undefined;
  private readonly logger: Logger;
  /** The runs executing here: runId -> the newest lease this process holds on it (claimed, re-taken or renewed). */
  private ledger: LeaseLedger | null = null;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private filling: Promise<void> | null = null;
  private wakeAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => Promise<void>) | null = null;

  constructor(options: ExecutorOptions) {
    const concurrency = options.concurrency ?? EXECUTOR_DEFAULTS.concurrency;
    const pollMs = options.pollMs ?? EXECUTOR_DEFAULTS.pollMs;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be a whole number >= 1, got ${concurrency}`);
    if (!(pollMs > 0)) throw new RangeError(`pollMs must be > 0, got ${pollMs}`);
    const settleMs = options.settleMs ?? EXECUTOR_DEFAULTS.settleMs;
    if (!(settleMs >= 0)) throw new RangeError(`settleMs must be >= 0, got ${settleMs}`);
    this.settleMs = settleMs;
    this.driver = options.driver;
    this.store = options.store;
    this.holder = options.holder ?? options.driver.holder;
    this.concurrency = concurrency;
    this.pollMs = pollMs;
    this.namespace = options.namespace;
    this.logger = (options.logger ?? pino({ enabled: false })).child({ component: 'executor' });
  }

  /** Number of runs executing here now. */
  get busy(): number {
    return this.ledger?.size ?? 0;
  }

  /** Subscribes to wake-ups, starts polling and claims at once. Resolves once the subscription is live. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`executor already ${this.state}`);
    this.state = 'running';
    this.ledger = new LeaseLedger(this.driver);
    this.unsubscribe = await this.store.wakeupSubscribe({ onPending: () => this.wake(), onResync: () => this.wake() });
    const poll = (): void => {
      this.pollTimer = setTimeout(() => {
        this.wake();
        if (this.state === 'running') poll();
      }, this.pollMs);
      this.pollTimer.unref();
    };
    poll();
    this.logger.info({ holder: this.holder, concurrency: this.concurrency, pollMs: this.pollMs }, 'executor started');
    this.wake();
  }

  /**
   * Stops taking work and drains (drain.ts): in-flight runs get `graceMs` to finish; then those
   * still executing are aborted, get `settleMs` to stop touching the world, and only the leases of
   * those that settled are released (PENDING, so another replica continues them at once). The
   * others keep their leases until they expire and the sweeper recovers them.
   */
  async stop(options: { graceMs: number }): Promise<{ released: string[]; unsettled: string[] }> {
    if (this.state === 'new') this.state = 'stopped';
    if (this.state === 'stopped') return { released: [], unsettled: [] };
    this.state = 'stopping';
    if (this.pollTimer) clearTimeout(this.pollTimer);
    await this.unsubscribe?.().catch((err: unknown) => this.logger.warn({ err }, 'unsubscribing the executor failed'));
    await this.filling?.catch(() => undefined);
    const ledger = this.ledger!;
    const { released, unsettled } = await drainExecutions({
      driver: this.driver, store: this.store, ledger, graceMs: options.graceMs, settleMs: this.settleMs,
      why: 'the worker is shutting down', logger: this.logger,
    });
    ledger.close();
    this.state = 'stopped';
    this.events.emit('stopped', { released, unsettled });
    return { released, unsettled };
  }

  /** Asks for a claim pass; coalesces with one in progress. Also called when this replica made a run PENDING itself (a due timer). */
  wake(): void {
    if (this.state !== 'running') return;
    if (this.filling) {
      this.wakeAgain = true;
      return;
    }
    this.filling = this.fill().finally(() => {
      this.filling = null;
      if (this.wakeAgain) {
        this.wakeAgain = false;
        this.wake();
      }
    });
  }

  private async fill(): Promise<void> {
    while (this.state === 'running') {
      const free = this.concurrency - this.busy;
      if (free <= 0) return;
      let leases: Lease[];
      try {
        leases = await this.store.runClaim({
          holder: this.holder, ttlMs: this.driver.leaseTtlMs, limit: free, ...(this.namespace ? { namespace: this.namespace } : {}),
          serves: this.driver.serves(), flows: true,
        });
      } catch (error) {
        this.logger.warn({ err: error }, 'claiming runs failed; retrying at the next wake-up or poll');
        this.events.emit('claim-failed', { error });
        return;
      }
      if (this.state !== 'running') {
        // stop() began while claiming: hand these straight back.
        await Promise.all(leases.map((lease) => this.store.runLeaseRelease({ lease }).catch(() => undefined)));
        return;
      }
      for (const lease of leases) this.launch(lease);
      if (leases.length < free) {
        if (this.busy === 0) this.events.emit('idle');
        return;
      }
    }
  }

  private launch(lease: Lease): void {
    const { runId } = lease;
    const ledger = this.ledger!;
    ledger.hold(runId, lease);
    this.events.emit('claimed', { runId, lease });
    void (async () => {
      let result: ExecuteResult | null = null;
      let error: unknown = null;
      try {
        result = await this.driver.execute({ lease });
      } catch (err) {
        error = err;
        this.logger.error({ runId, err }, 'execution threw; the lease expires and the sweeper recovers the run');
      }
      ledger.forget(runId);
      this.events.emit('finished', { runId, result, error });
      this.wake(); // a slot is free
    })();
  }
}
