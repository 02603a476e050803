// engine/: RecoveryOperations, the engine operations the sweeper acts through: run timeouts, due deadlines, parents' wake-up.
// Must not choose what to recover or when (sweeper/ does), nor hold a lease of its own: it writes through the store it is given.
import type { Logger } from 'pino';
import type { Run } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { childResolveParent, suspensionsResolveDue, type ResolveResult } from './runtime/resolutions.js';
import { runTimeOut } from './runtime/run-ending.js';

/*
 * The sweeper recovers runs from outside their executions. What it does to one run is an engine
 * operation, the same the executing replica does on its fast path (RunDriver): fail a run past its
 * deadline and cancel its children, apply the timeout resolution of due deadlines, close a parent's
 * wait on a child that ended. The sweeper reaches them here, through the engine's front door
 * (src/engine/index.ts), never the runtime's files. `store` is the sweeper's leader-fenced store, so
 * every write carries its leader epoch.
 */
export class RecoveryOperations {
  readonly #store: JournalStore;
  readonly #holder: string;
  readonly #leaseTtlMs: number;
  readonly #logger: Logger;

  constructor(options: { store: JournalStore; holder: string; leaseTtlMs: number; logger: Logger }) {
    this.#store = options.store;
    this.#holder = options.holder;
    this.#leaseTtlMs = options.leaseTtlMs;
    this.#logger = options.logger;
  }

  /** Fails `run` (past its deadline) with RunTimedOutError under a forced status, then cancels its unfinished children. */
  runTimeOut(run: Run): Promise<{ timedOut: Run | null; cancelled: string[] }> {
    // closeWaits false: the forced status fences the holder; the run's open waits stay as they are.
    return runTimeOut({ store: this.#store, holder: this.#holder, leaseTtlMs: this.#leaseTtlMs, logger: this.#logger, closeWaits: false }, run);
  }

  /** Applies the timeout resolution (the pinned default decision; `{}` for a sleep) of up to `limit` due deadlines. */
  suspensionsResolveDue(params: { limit: number }): ReturnType<typeof suspensionsResolveDue> {
    return suspensionsResolveDue(this.#store, { limit: params.limit, logger: this.#logger });
  }

  /** Closes the `child` wait of the parent of `child`, which ended (the executing replica's own wake-up was lost). */
  childResolveParent(child: Run): Promise<ResolveResult | null> {
    return childResolveParent(this.#store, child, this.#logger);
  }
}
