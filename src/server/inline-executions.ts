import type { Logger } from 'pino';
import type { Engine } from '../engine/engine.js';
import type { Lease } from '../journal/run.js';

/**
 * Runs the API executes on the replica that received the call, with no queue hop: StartRun with
 * `wait`, and a run that a SendSignal or DecideApproval (or ResumeRun) made PENDING, which this
 * replica takes at once unless an executor claimed it first. It also keeps the ledger of every
 * lease this process's engine holds (from the engine's events), so that on shutdown whatever is
 * still executing after the grace period is handed back (PENDING) rather than left to expire.
 */
export class InlineExecutions {
  readonly #engine: Engine;
  readonly #logger: Logger;
  readonly #work = new Set<Promise<unknown>>();
  /** runId -> the newest lease this process holds while it executes the run. */
  readonly #leases = new Map<string, Lease>();
  #stopping = false;
  /** Called whenever the ledger may have emptied (stop() waits for it). */
  #onIdle: (() => void) | null = null;
  readonly #onLease = ({ runId, lease }: { runId: string; lease: Lease }): void => {
    this.#leases.set(runId, lease);
  };
  readonly #onEnded = ({ runId }: { runId: string }): void => {
    this.#leases.delete(runId);
    if (this.#leases.size === 0) this.#onIdle?.();
  };

  constructor(options: { engine: Engine; logger: Logger }) {
    this.#engine = options.engine;
    this.#logger = options.logger.child({ component: 'inline-executions' });
    this.#engine.events.on('lease-acquired', this.#onLease);
    this.#engine.events.on('lease-renewed', this.#onLease);
    this.#engine.events.on('execution-ended', this.#onEnded);
  }

  /** Runs executing here now, through this class or any other caller of the engine. */
  get leasesHeld(): number {
    return this.#leases.size;
  }

  /** Tracks `work` (an engine call that executes runs) until it settles, so shutdown can wait for it. */
  track<T>(work: Promise<T>): Promise<T> {
    this.#work.add(work);
    const forget = (): void => {
      this.#work.delete(work);
    };
    work.then(forget, forget);
    return work;
  }

  /**
   * Executes `runId` here, in the background, if it is claimable (PENDING, or RUNNING with an
   * expired lease); a no-op when another worker holds it or the server is stopping.
   */
  kick(runId: string, namespace: string): void {
    if (this.#stopping) return;
    const work = this.#engine.runExecute({ runId, namespace }).then(
      (result) => this.#logger.debug({ runId, outcome: result?.outcome ?? 'claimed elsewhere' }, 'inline execution ended'),
      (err: unknown) => this.#logger.warn({ runId, err }, 'inline execution failed; an executor or the sweeper takes the run over'),
    );
    void this.track(work);
  }

  /**
   * Stops kicking and waits up to `graceMs` until every execution of this process has ended (its
   * own and the executor's: a lease handed back while its execution still runs would let another
   * replica redispatch an effect this one is still performing). Then it releases the leases still
   * held: those runs become PENDING for another replica, and this one's late writes are fenced.
   * Resolves with the released run ids.
   */
  async stop(options: { graceMs: number }): Promise<{ released: string[] }> {
    this.#stopping = true;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, options.graceMs))));
    const idle = new Promise<void>((resolve) => {
      this.#onIdle = resolve;
      if (this.#leases.size === 0) resolve();
    });
    await Promise.race([Promise.all([Promise.allSettled([...this.#work]), idle]), timedOut]);
    this.#onIdle = null;
    clearTimeout(timer);
    const released: string[] = [];
    for (const [runId, lease] of this.#leases) {
      try {
        await this.#engine.store.runLeaseRelease({ lease });
        released.push(runId);
      } catch (err) {
        this.#logger.warn({ runId, err }, 'could not release a lease on shutdown; it expires and the sweeper recovers the run');
      }
    }
    if (released.length) this.#logger.info({ released }, 'released runs still executing after the grace period');
    this.#engine.events.off('lease-acquired', this.#onLease);
    this.#engine.events.off('lease-renewed', this.#onLease);
    this.#engine.events.off('execution-ended', this.#onEnded);
    return { released };
  }
}
