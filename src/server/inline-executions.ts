import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import type { Engine } from '../engine/engine.js';
import type { Lease } from '../journal/run.js';

/**
 * Runs the API executes on the replica that received the call, with no queue hop: StartRun with
 * `wait`, and a run that a SendSignal or DecideApproval (or ResumeRun) made PENDING, which this
 * replica takes at once unless an executor claimed it first. It keeps the ledger of the leases its
 * own executions hold (an AsyncLocalStorage marks them; the executor's are the executor's), so
 * that on shutdown whatever it still executes after the grace period is aborted and, once settled,
 * handed back (PENDING) rather than left to expire.
 */
export const INLINE_SETTLE_MS = 2_000;

export class InlineExecutions {
  readonly #engine: Engine;
  readonly #logger: Logger;
  readonly #settleMs: number;
  readonly #work = new Set<Promise<unknown>>();
  /** Marks the engine calls this class made, so the lease events of its executions are told apart. */
  readonly #mine = new AsyncLocalStorage<true>();
  /** runId -> the newest lease this process holds while it executes the run here. */
  readonly #leases = new Map<string, Lease>();
  /** runId -> called when an execution of it ended (stop() waits for aborted ones). */
  readonly #endWaiters = new Map<string, Array<() => void>>();
  #stopping = false;
  /** Called whenever the ledger may have emptied (stop() waits for it). */
  #onIdle: (() => void) | null = null;
  readonly #onLease = ({ runId, lease }: { runId: string; lease: Lease }): void => {
    if (this.#mine.getStore() || this.#leases.has(runId)) this.#leases.set(runId, lease);
  };
  readonly #onEnded = ({ runId }: { runId: string }): void => {
    this.#leases.delete(runId);
    for (const resolve of this.#endWaiters.get(runId)?.splice(0) ?? []) resolve();
    if (this.#leases.size === 0) this.#onIdle?.();
  };

  constructor(options: { engine: Engine; logger: Logger; /** See stop(); default 2 s. */ settleMs?: number }) {
    this.#engine = options.engine;
    this.#logger = options.logger.child({ component: 'inline-executions' });
    this.#settleMs = options.settleMs ?? INLINE_SETTLE_MS;
    this.#engine.events.on('lease-acquired', this.#onLease);
    this.#engine.events.on('lease-renewed', this.#onLease);
    this.#engine.events.on('execution-ended', this.#onEnded);
  }

  /** Runs executing here now through this class (not the executor's). */
  get leasesHeld(): number {
    return this.#leases.size;
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
   * Executes `runId` here, in the background, if it is claimable (PENDING, or RUNNING with an
   * expired lease); a no-op when another worker holds it or the server is stopping.
   */
  kick(runId: string, namespace: string): void {
    if (this.#stopping) return;
    void this.track(() => this.#engine.runExecute({ runId, namespace })).then(
      (result) => this.#logger.debug({ runId, outcome: result?.outcome ?? 'claimed elsewhere' }, 'inline execution ended'),
      (err: unknown) => this.#logger.warn({ runId, err }, 'inline execution failed; an executor or the sweeper takes the run over'),
    );
  }

  /**
   * Stops kicking and waits up to `graceMs` until every execution of this class has ended. Then it
   * aborts those still executing (Engine.executionsAbort: no further writes, their tools' and model
   * calls' AbortSignal fires) and gives them `settleMs` to stop touching the world. Only the leases
   * of the settled ones are released (those runs become PENDING for another replica); handing back
   * one whose effect still runs would let another replica redispatch it while it runs here. The
   * rest keep their leases until they expire and the sweeper recovers them. Resolves with both lists.
   */
  async stop(options: { graceMs: number }): Promise<{ released: string[]; unsettled: string[] }> {
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
    const unsettled: string[] = [];
    // Snapshot first: an aborted execution ends at once and leaves the ledger.
    const running = [...this.#leases];
    if (running.length > 0) {
      const ended = new Map(running.map(([runId]) => [runId, new Promise<void>((resolve) => {
        const waiters = this.#endWaiters.get(runId) ?? [];
        waiters.push(resolve);
        this.#endWaiters.set(runId, waiters);
      })]));
      const settling = this.#engine.executionsAbort({ runIds: running.map(([runId]) => runId), why: 'the server is shutting down' });
      const settled = new Set<string>();
      const all = Promise.all(running.map(async ([runId]) => {
        await Promise.all([ended.get(runId), settling.get(runId)]);
        settled.add(runId);
      }));
      let settleTimer: NodeJS.Timeout | undefined;
      await Promise.race([all, new Promise<void>((resolve) => (settleTimer = setTimeout(resolve, this.#settleMs)))]);
      clearTimeout(settleTimer);
      for (const [runId, lease] of running) {
        if (!settled.has(runId)) {
          unsettled.push(runId);
          continue;
        }
        try {
          await this.#engine.store.runLeaseRelease({ lease });
          released.push(runId);
        } catch (err) {
          this.#logger.warn({ runId, err }, 'could not release a lease on shutdown; it expires and the sweeper recovers the run');
        }
      }
    }
    if (released.length) this.#logger.info({ released }, 'released runs aborted after the grace period');
    if (unsettled.length) {
      this.#logger.warn({ unsettled, settleMs: this.#settleMs }, 'runs still performing an effect after being aborted keep their leases; they expire and the sweeper recovers the runs');
    }
    this.#endWaiters.clear();
    this.#engine.events.off('lease-acquired', this.#onLease);
    this.#engine.events.off('lease-renewed', this.#onLease);
    this.#engine.events.off('execution-ended', this.#onEnded);
    return { released, unsettled };
  }
}
