// scheduling/: runs executed on the replica that received the call (StartRun with wait, a run made runnable).
// Must not execute a run itself: it decides where, and the RunDriver executes; the transport never decides this.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import type { RunLeaseAcquireRunningResult } from '../../store/store.js';
import type { RunDriver } from '../runtime/run-driver.js';
import { drainExecutions, type DrainResult } from './drain.js';
import { LeaseLedger } from './lease-ledger.js';

/*
 * Runs executed on the replica that received the call, with no queue hop: StartRun with `wait`,
 * and a run that a SendSignal, a DecideApproval or a ResumeRun made runnable, which this replica
 * takes at once unless an executor claimed it first. Its ledger holds the leases of its own
 * executions (an AsyncLocalStorage marks them; the executor's are the executor's), so that on
 * shutdown whatever it still executes after the grace period is aborted and, once settled, handed
 * back (PENDING) rather than left to expire (drain.ts, the executor's algorithm too).
 */

export const INLINE_SETTLE_MS = 2_000;

/** What an engine operation that may resolve a wait reports (signalSend, approvalDecide, runResume). */
export interface Resolution {
  runId: string;
  /** The call closed a wait (or resumed the run), so the run can continue: execute it now. */
  runnable: boolean;
  /** The run's lease, taken with the call that made it runnable (a signal or an approval decision with `leaseFor`). */
  taken?: RunLeaseAcquireRunningResult | null;
}

export class InlineExecutions {
  readonly #driver: RunDriver;
  readonly #logger: Logger;
  readonly #settleMs: number;
  readonly #work = new Set<Promise<unknown>>();
  /** Marks the engine calls this class made, so the lease events of its executions are told apart. */
  readonly #mine = new AsyncLocalStorage<true>();
  readonly #ledger: LeaseLedger;
  #stopping = false;

  constructor(options: { driver: RunDriver; logger: Logger; /** See stop(); default 2 s. */ settleMs?: number }) {
    this.#driver = options.driver;
    this.#logger = options.logger.child({ component: 'inline-executions' });
    this.#settleMs = options.settleMs ?? INLINE_SETTLE_MS;
    this.#ledger = new LeaseLedger(options.driver, { adopts: () => this.#mine.getStore() === true, forgetOnEnd: true });
  }

  /** Runs executing here now through this class (not the executor's). */
  get leasesHeld(): number {
    return this.#ledger.size;
  }

  /** Runs `work` (an engine call that executes runs) as this class's own, until it settles, so shutdown can wait for it. */
  track<T>(work: () => Promise<T>): Promise<T> {
    const running = this.#mine.run(true, work);
    this.#work.add(running);
    const forget = (): void => {
      this.#work.delete(running);
    };
    running.then(forget, forget);
    return running;
  }

  /**
   * The one place the decision "a resolution landed, execute the run here" is made: executes
   * `runId` here in the background when the resolution made it runnable. A resolution that came
   * with the run's lease (`taken`: a signal or a decision written with `leaseFor`) executes under that lease,
   * or hands it back (PENDING) when this class is stopping already.
   */
  resolved(resolution: Resolution, namespace: string): void {
    const { taken } = resolution;
    if (taken && this.#stopping) {
      void this.#driver.store.runLeaseRelease({ lease: taken.lease })
        .catch((err: unknown) => this.#logger.warn({ runId: taken.lease.runId, err }, 'could not hand a taken run back; its lease expires'));
    } else if (taken) this.inBackground(taken.lease.runId, () => this.#driver.execute({ taken }));
    else if (resolution.runnable) this.executeHere(resolution.runId, namespace);
  }

  /** Whether this class still executes runs (false once stop() began): a caller takes a lease for it only then. */
  get accepting(): boolean {
    return !this.#stopping;
  }

  /**
   * Executes `runId` here, in the background, if it is claimable (PENDING, or RUNNING with an
   * expired lease); a no-op when another worker holds it or the server is stopping.
   */
  executeHere(runId: string, namespace: string): void {
    if (this.#stopping) return;
    this.inBackground(runId, () => this.#driver.execute({ runId, namespace }));
  }

  private inBackground(runId: string, execute: () => Promise<{ outcome: string } | null>): void {
    void this.track(execute).then(
      (result) => this.#logger.debug({ runId, outcome: result?.outcome ?? 'claimed elsewhere' }, 'inline execution ended'),
      (err: unknown) => this.#logger.warn({ runId, err }, 'inline execution failed; an executor or the sweeper takes the run over'),
    );
  }

  /**
   * Stops executing new runs and drains (drain.ts): up to `graceMs` for every execution of this
   * class to end, then the abort, settle and release. Resolves with both lists.
   */
  async stop(options: { graceMs: number }): Promise<DrainResult> {
    this.#stopping = true;
    try {
      return await drainExecutions({
        driver: this.#driver, store: this.#driver.store, ledger: this.#ledger, work: this.#work, graceMs: options.graceMs,
        settleMs: this.#settleMs, why: 'the server is shutting down', logger: this.#logger,
      });
    } finally {
      this.#ledger.close();
    }
  }
}
