// scheduling/: the shutdown drain shared by the executor loop and the inline executions.
// Must not release the lease of an execution that has not settled (another replica would run it twice at once).
import type { Logger } from 'pino';
import type { JournalStore } from '../../store/store.js';
import type { RunDriver } from '../runtime/run-driver.js';
import type { LeaseLedger } from './lease-ledger.js';

/*
 * The shutdown drain every party that executes runs uses (the executor loop, the API's inline
 * executions): let the executions finish for the grace period; then abort those still running
 * (RunDriver.executionsAbort: no further writes, their tools' and model calls' AbortSignal fires) and
 * give them `settleMs` to stop touching the world. Only the leases of those that settled are
 * released (the runs become PENDING, so another replica continues them at once): releasing one
 * whose effect still runs would let another replica redispatch it while it runs here, twice at
 * once. The others keep their leases until they expire and the sweeper recovers them.
 * Pinned by test/engine/executor.test.ts and test/engine/inline-executions.test.ts.
 */

export interface DrainResult {
  /** Aborted after the grace period, settled, and handed back as PENDING. */
  released: string[];
  /** Still performing an effect after being aborted: their leases were kept to expire. */
  unsettled: string[];
}

export async function drainExecutions(params: {
  driver: RunDriver;
  /** Where the leases are released (the party's store). */
  store: JournalStore;
  ledger: LeaseLedger;
  /** Other work of the party to wait for within the grace period (engine calls not yet holding a lease). */
  work?: Iterable<Promise<unknown>>;
  graceMs: number;
  settleMs: number;
  /** Why the executions are aborted (ExecutionAbortedError's `why`). */
  why: string;
  logger: Logger;
}): Promise<DrainResult> {
  const { driver, ledger, logger } = params;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, params.graceMs))));
  await Promise.race([Promise.all([Promise.allSettled([...(params.work ?? [])]), ledger.empty()]), timedOut]);
  clearTimeout(timer);
  const released: string[] = [];
  const unsettled: string[] = [];
  const running = ledger.held();
  if (running.length === 0) return { released, unsettled };
  const settling = driver.executionsAbort({ runIds: running.map((r) => r.runId), why: params.why });
  const settled = new Set<string>();
  const all = Promise.all(running.map(async ({ runId, ended }) => {
    await Promise.all([ended, settling.get(runId)]);
    settled.add(runId);
  }));
  let settleTimer: NodeJS.Timeout | undefined;
  await Promise.race([all, new Promise<void>((resolve) => (settleTimer = setTimeout(resolve, params.settleMs)))]);
  clearTimeout(settleTimer);
  for (const { runId, lease } of running) {
    if (!settled.has(runId)) {
      unsettled.push(runId);
      continue;
    }
    try {
      await params.store.runLeaseRelease({ lease });
      released.push(runId);
    } catch (err) {
      logger.warn({ runId, err }, 'could not release a lease on shutdown; it expires and the sweeper recovers the run');
    }
  }
  if (released.length) logger.info({ released }, 'released runs aborted after the grace period');
  if (unsettled.length) {
    logger.warn({ unsettled, settleMs: params.settleMs }, 'runs still performing an effect after being aborted keep their leases; they expire and the sweeper recovers the runs');
  }
  return { released, unsettled };
}
