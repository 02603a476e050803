// runtime/: the in-process fast path of a run timeout: stops an execution once the store's clock passes its deadline.
// Must not end the run itself (run-driver.ts fails it under its lease); the sweeper is the guarantee.
import type { Run } from '../../journal/run.js';
import { RunTimedOutError } from '../errors.js';
import type { Execution } from './execution.js';

/**
 * Stops `execution` once the store's clock passes the run's deadline (`inMs` from now): checked
 * again when the timer fires (a process timer is not the database clock), and given up when the
 * execution ends.
 */
export function deadlineWatch(params: { execution: Execution; run: Run; inMs: number; clock: () => Promise<Date> }): void {
  const { execution, run, clock } = params;
  const deadline = run.deadlineAt!;
  let timer: NodeJS.Timeout | null = null;
  const arm = (ms: number): void => {
    timer = setTimeout(() => void check(), Math.min(Math.max(ms, 1), 2_147_483_647));
    timer.unref();
  };
  const check = async (): Promise<void> => {
    if (execution.over) return;
    let left: number;
    try {
      left = deadline.getTime() - (await clock()).getTime();
    } catch {
      left = 1_000; // the clock is unreachable: the store is too; look again shortly (the sweeper is the guarantee)
    }
    if (left > 0) return arm(Math.max(left, 50));
    execution.stop('timed_out', new RunTimedOutError(run.id, deadline));
  };
  arm(params.inMs);
  void execution.whenEnded().then(() => {
    if (timer) clearTimeout(timer);
  });
}
