// scheduling/: the leases held by the executions one party runs in this process.
// Must not renew or release a lease itself: the engine's lease events keep it current, drain.ts releases.
import type { Lease } from '../../journal/run.js';
import type { RunDriver } from '../runtime/run-driver.js';

/*
 * The leases held by the executions one party runs in this process (the executor loop, or the
 * API's inline executions): run id -> the newest lease (claimed, re-taken or renewed: the engine's
 * lease events keep it current), and a promise that resolves when the party is done with the run.
 * On shutdown drainExecutions (drain.ts) aborts what is still here and releases the leases of the
 * executions that settled.
 */

export interface HeldLease {
  runId: string;
  lease: Lease;
  /** Resolves once the run left the ledger (its execution ended). */
  ended: Promise<void>;
}

export class LeaseLedger {
  readonly #driver: RunDriver;
  readonly #adopts: () => boolean;
  readonly #forgetOnEnd: boolean;
  readonly #held = new Map<string, { lease: Lease; ended: Promise<void>; end: () => void }>();
  readonly #emptyWaiters: Array<() => void> = [];
  readonly #onLease = ({ runId, lease }: { runId: string; lease: Lease }): void => {
    if (this.#adopts() || this.#held.has(runId)) this.hold(runId, lease);
  };
  readonly #onEnded = ({ runId }: { runId: string }): void => {
    this.forget(runId);
  };

  /**
   * `adopts`: whether a lease the engine reports now belongs to this party (called inside the
   * event, so an AsyncLocalStorage can tell its executions apart); otherwise only leases of runs
   * already held are updated. `forgetOnEnd`: a run leaves the ledger when its execution ends (the
   * engine's `execution-ended`), rather than when the party calls forget().
   */
  constructor(driver: RunDriver, options: { adopts?: () => boolean; forgetOnEnd?: boolean } = {}) {
    this.#driver = driver;
    this.#adopts = options.adopts ?? (() => false);
    this.#forgetOnEnd = options.forgetOnEnd ?? false;
    driver.events.on('lease-acquired', this.#onLease);
    driver.events.on('lease-renewed', this.#onLease);
    if (this.#forgetOnEnd) driver.events.on('execution-ended', this.#onEnded);
  }

  get size(): number {
    return this.#held.size;
  }

  /** Records (or updates) the lease this party holds on `runId`. */
  hold(runId: string, lease: Lease): void {
    const held = this.#held.get(runId);
    if (held) {
      held.lease = lease;
      return;
    }
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    this.#held.set(runId, { lease, ended, end });
  }

  /** The party is done with `runId`. */
  forget(runId: string): void {
    const held = this.#held.get(runId);
    if (!held) return;
    this.#held.delete(runId);
    held.end();
    if (this.#held.size === 0) for (const resolve of this.#emptyWaiters.splice(0)) resolve();
  }

  /** What is held now (a snapshot: an aborted execution ends at once and leaves the ledger). */
  held(): HeldLease[] {
    return [...this.#held].map(([runId, { lease, ended }]) => ({ runId, lease, ended }));
  }

  /** Resolves once nothing is held. */
  empty(): Promise<void> {
    if (this.#held.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#emptyWaiters.push(resolve));
  }

  /** Stops following the engine's lease events. */
  close(): void {
    this.#driver.events.off('lease-acquired', this.#onLease);
    this.#driver.events.off('lease-renewed', this.#onLease);
    if (this.#forgetOnEnd) this.#driver.events.off('execution-ended', this.#onEnded);
  }
}
