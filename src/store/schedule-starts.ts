import { SCHEDULE_RECENT_ACTIONS, type ScheduleState } from '../journal/schedule.js';
import type { RunCreateResult } from './run-params.js';
import type { ScheduleStart } from './schedule-params.js';

/**
 * What scheduleFire writes into a schedule's state for the runs it created (both stores): each run
 * is open until the ticker sees it end, and is the newest recent action. A repeated key returns the
 * run an earlier fire created; it is recorded once.
 */
export function recordStarts(state: ScheduleState, starts: readonly ScheduleStart[], runs: readonly RunCreateResult[], now: Date): ScheduleState {
  const next = structuredClone(state);
  starts.forEach((start, i) => {
    const run = runs[i]!.run;
    if (next.recent.some((a) => a.runId === run.id)) return;
    if (!next.open.includes(run.id)) next.open.push(run.id);
    next.recent.push({ scheduledAt: start.scheduledAt, takenAt: now.toISOString(), runId: run.id, cause: start.cause });
    next.actions += 1;
  });
  next.recent = next.recent.slice(-SCHEDULE_RECENT_ACTIONS);
  return next;
}
