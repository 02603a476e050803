import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import type { Lease } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import type { Engine, ExecuteResult } from '../engine.js';

/*
 * The executor loop of `waymark server`: claims PENDING runs and executes them, a bounded number at
 * a time per replica. It wakes on the store's `onPending` wake-up (NOTIFY) and also polls, because
 * a notification is lost while the listener is disconnected (reliability.md §2.6). The shape is
 * STYLE habit 11: named defaults validated at construction, start()/stop() that drain, events.
 */

export interface ExecutorOptions {
  engine: Engine;
  store: JournalStore;
  /** Lease holder recorded on claimed runs; default the engine's. Must be unique per process. */
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
  private readonly engine: Engine;
  private readonly store: JournalStore;
  private readonly namespace: string | undefined;
  private readonly logger: Logger;
  /** runId -> the newest lease this process holds on it (claimed, re-taken or renewed). */
  private readonly inFlight = new Map<string, { lease: Lease; done: Promise<void> }>();
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private filling: Promise<void> | null = null;
  private wakeAgain = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => Promise<void>) | null = null;
  private readonly onLease = ({ runId, lease }: { runId: string; lease: Lease }): void => {
    const entry = this.inFlight.get(runId);
    if (entry) entry.lease = lease;
  };

  constructor(options: ExecutorOptions) {
    const concurrency = options.concurrency ?? EXECUTOR_DEFAULTS.concurrency;
    const pollMs = options.pollMs ?? EXECUTOR_DEFAULTS.pollMs;
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency must be a whole number >= 1, got ${concurrency}`);
    if (!(pollMs > 0)) throw new RangeError(`pollMs must be > 0, got ${pollMs}`);
    const settleMs = options.settleMs ?? EXECUTOR_DEFAULTS.settleMs;
    if (!(settleMs >= 0)) throw new RangeError(`settleMs must be >= 0, got ${settleMs}`);
    this.settleMs = settleMs;
    this.engine = options.engine;
    this.store = options.store;
    this.holder = options.holder ?? options.engine.holder;
    this.concurrency = concurrency;
    this.pollMs = pollMs;
    this.namespace = options.namespace;
    this.logger = (options.logger ?? pino({ enabled: false })).child({ component: 'executor' });
  }

  /** Number of runs executing here now. */
  get busy(): number {
    return this.inFlight.size;
  }

  /** Subscribes to wake-ups, starts polling and claims at once. Resolves once the subscription is live. */
  async start(): Promise<void> {
    if (this.state !== 'new') throw new Error(`executor already ${this.state}`);
    this.state = 'running';
    this.engine.events.on('lease-acquired', this.onLease);
    this.engine.events.on('lease-renewed', this.onLease);
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
   * Stops taking work and lets in-flight runs finish for up to `graceMs`. Then it aborts the ones
   * still executing (no further writes; their tools' and model calls' AbortSignal fires) and gives
   * them `settleMs` to stop touching the world. Only the leases of those that settled are released
   * (they become PENDING, so another replica continues them at once): releasing one whose effect
   * still runs would let another replica redispatch it, and the effect would run twice at once.
   * The others keep their leases until they expire and the sweeper recovers them.
   */
  async stop(options: { graceMs: number }): Promise<{ released: string[]; unsettled: string[] }> {
    if (this.state === 'new') this.state = 'stopped';
    if (this.state === 'stopped') return { released: [], unsettled: [] };
    this.state = 'stopping';
    if (this.pollTimer) clearTimeout(this.pollTimer);
    await this.unsubscribe?.().catch((err: unknown) => this.logger.warn({ err }, 'unsubscribing the executor failed'));
    await this.filling?.catch(() => undefined);
    const drained = Promise.all([...this.inFlight.values()].map((r) => r.done)).then(() => true);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(0, options.graceMs))));
    const finished = await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    const released: string[] = [];
    const unsettled: string[] = [];
    if (!finished) {
      // Snapshot first: an aborted execution ends at once and leaves inFlight.
      const running = [...this.inFlight].map(([runId, { lease, done }]) => ({ runId, lease, done }));
      const settling = this.engine.executionsAbort({ runIds: running.map((r) => r.runId), why: 'the worker is shutting down' });
      const settled = new Set<string>();
      const all = Promise.all(running.map(async ({ runId, done }) => {
        await Promise.all([done, settling.get(runId)]);
        settled.add(runId);
      }));
      let settleTimer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise<void>((resolve) => (settleTimer = setTimeout(resolve, this.settleMs)))]);
      clearTimeout(settleTimer);
      for (const { runId, lease } of running) {
        if (!settled.has(runId)) {
          unsettled.push(runId);
          continue;
        }
        try {
          await this.store.runLeaseRelease({ lease });
          released.push(runId);
        } catch (err) {
          this.logger.warn({ runId, err }, 'could not release a lease on shutdown; it expires and the sweeper recovers the run');
        }
      }
      if (released.length) this.logger.info({ released }, 'released runs aborted after the grace period');
      if (unsettled.length) {
        this.logger.warn({ unsettled, settleMs: this.settleMs }, 'runs still performing an effect after being aborted keep their leases; they expire and the sweeper recovers the runs');
      }
    }
    this.engine.events.off('lease-acquired', this.onLease);
    this.engine.events.off('lease-renewed', this.onLease);
    this.state = 'stopped';
    this.events.emit('stopped', { released, unsettled });
    return { released, unsettled };
  }

  /** Asks for a claim pass; coalesces with one in progress. */
  private wake(): void {
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
      const free = this.concurrency - this.inFlight.size;
      if (free <= 0) return;
      let leases: Lease[];
      try {
        leases = await this.store.runClaim({
          holder: this.holder, ttlMs: this.engine.leaseTtlMs, limit: free, ...(this.namespace ? { namespace: this.namespace } : {}),
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
        if (this.inFlight.size === 0) this.events.emit('idle');
        return;
      }
    }
  }

  private launch(lease: Lease): void {
    const { runId } = lease;
    const entry = { lease, done: Promise.resolve() };
    this.inFlight.set(runId, entry);
    this.events.emit('claimed', { runId, lease });
    entry.done = (async () => {
      let result: ExecuteResult | null = null;
      let error: unknown = null;
      try {
        result = await this.engine.runExecute({ lease });
      } catch (err) {
        error = err;
        this.logger.error({ runId, err }, 'execution threw; the lease expires and the sweeper recovers the run');
      }
      this.inFlight.delete(runId);
      this.events.emit('finished', { runId, result, error });
      this.wake(); // a slot is free
    })();
  }
}
