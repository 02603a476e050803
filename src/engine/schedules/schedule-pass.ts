// schedules/: one look at one schedule by the ticker: its open runs, its queued starts, its due ticks under the overlap policy, one fenced fire.
// Must not choose which schedules or when (sweeper/schedule-ticker.ts does), hold a timer, or write a run outside store.scheduleFire.
import type { Logger } from 'pino';
import { WorkflowNotFoundError } from '../../journal/errors.js';
import { isTerminalStatus, type Run, type RunError } from '../../journal/run.js';
import {
  SCHEDULE_ID_LABEL, SCHEDULED_AT_LABEL, scheduleRunKey, type OverlapPolicy, type ScheduleCause, type ScheduleRecord, type ScheduleState,
} from '../../journal/schedule.js';
import type { JournalStore, RunCreateParams, ScheduleStart, SweeperLease } from '../../store/store.js';
import { InvalidInputError } from '../errors.js';
import type { RunDefinition, RunEngine } from '../run-engine.js';
import { scheduleSpendOver } from './schedule-budget.js';
import { nextTick, tickJitterMs } from './schedule-times.js';

/*
 * Exactly one run per tick (docs/schedules.md "Exactly once"): every run a tick starts is created by
 * store.scheduleFire with the idempotency key scheduleRunKey(schedule, scheduled time), in the same
 * step that moves the schedule's cursor past the tick, compare-and-set on the schedule's revision and
 * fenced by the sweeper's leader lease. A pass that loses either (a concurrent API write, a takeover)
 * writes nothing; whoever passes next recomputes the same ticks from the cursor and gets the same keys.
 */

/** Why a schedule terminated its open run (TERMINATE_OTHER); pause-on-failure ignores such failures. */
export const TERMINATED_REASON = 'terminated';

export interface SchedulePassDeps {
  /** The ticker's store: the sweeper's leader-fenced view. */
  store: JournalStore;
  runs: RunEngine;
  leader?: SweeperLease;
  logger: Logger;
  /** How soon a schedule with an open run it must watch (buffered starts, pause on failure, budget) is looked at again. */
  watchMs: number;
  /** Runs one pass may start for one schedule; the rest wait for the next pass (due at once). */
  maxStarts: number;
  /** Definitions resolved during this round of passes, by namespace and workflow. */
  definitions: Map<string, Promise<RunDefinition>>;
}

export interface PassOutcome {
  /** Null: nothing written (the revision moved, or the workflow could not be resolved). */
  schedule: ScheduleRecord | null;
  started: Run[];
  ended: string[];
  paused: string | null;
}

type Verdict = 'start' | 'wait' | 'drop' | 'cancel' | 'terminate';

/** What the overlap policy makes of a start while a run of the schedule is open (Temporal's ScheduleOverlapPolicy). */
function overlapVerdict(policy: OverlapPolicy, open: boolean): Verdict {
  if (!open || policy === 'ALLOW_ALL') return 'start';
  if (policy === 'SKIP') return 'drop';
  if (policy === 'CANCEL_OTHER') return 'cancel';
  if (policy === 'TERMINATE_OTHER') return 'terminate';
  return 'wait';
}

export async function schedulePass(deps: SchedulePassDeps, s: ScheduleRecord, now: Date): Promise<PassOutcome> {
  const state: ScheduleState = structuredClone(s.state);
  const outcome: PassOutcome = { schedule: null, started: [], ended: [], paused: null };
  // 1. The open runs: which ended, and whether one failed (pause on failure).
  if (state.open.length > 0) {
    const runs = new Map((await deps.store.scheduleRuns({ namespace: s.namespace, runIds: state.open })).map((r) => [r.id, r]));
    const failed = state.open.map((id) => runs.get(id)).find((r) => r?.status === 'FAILED' && r.error?.reason !== TERMINATED_REASON);
    state.open = state.open.filter((id) => runs.has(id) && !isTerminalStatus(runs.get(id)!.status));
    if (failed && s.policies.pauseOnFailure) outcome.paused = `paused: run ${failed.id} failed (pause on failure)`;
  }
  if (!outcome.paused && s.policies.budgetPause) {
    const spent = await scheduleSpendOver(deps.store, s, now);
    if (spent > s.policies.budgetPause.limitUsd) {
      outcome.paused = `paused: its runs spent $${spent.toFixed(4)} in the last ${s.policies.budgetPause.windowMs} ms, over the limit of $${s.policies.budgetPause.limitUsd}`;
    }
  }
  const planned: { scheduledAt: string; cause: ScheduleCause }[] = [];
  const toEnd = new Map<string, 'cancel' | 'terminate'>();
  const open = () => state.open.some((id) => !toEnd.has(id)) || planned.length > 0;
  const endOpen = (how: 'cancel' | 'terminate') => {
    for (const id of state.open) toEnd.set(id, how);
    state.overlapSkipped += planned.length; // replaced before they started
    planned.length = 0;
  };
  let ticks = 0;
  if (!outcome.paused) {
    // 2. Queued starts first (buffered ticks, triggers, backfills), in order, each under its own policy.
    while (state.buffered.length > 0 && planned.length < deps.maxStarts) {
      const head = state.buffered[0]!;
      const verdict = overlapVerdict(head.overlap, open());
      if (verdict === 'wait') break;
      state.buffered.shift();
      if (verdict === 'drop') {
        state.overlapSkipped++;
        continue;
      }
      if (verdict === 'cancel' || verdict === 'terminate') endOpen(verdict);
      planned.push({ scheduledAt: head.scheduledAt, cause: head.cause });
    }
    // 3. Due ticks after the cursor: missed past the catch-up window, else under the schedule's policy.
    let cursor = new Date(state.cursor ?? s.createdAt.toISOString());
    while (planned.length < deps.maxStarts && state.remainingActions !== 0) {
      const tick = nextTick(s.spec, cursor);
      if (!tick || tick.getTime() + tickJitterMs(s.id, tick, s.spec.jitterMs) > now.getTime()) break;
      cursor = tick;
      state.cursor = tick.toISOString();
      if (now.getTime() - tick.getTime() > s.policies.catchupWindowMs) {
        state.missedCatchup++;
        continue;
      }
      const policy = s.policies.overlap;
      const verdict = overlapVerdict(policy, open());
      if (verdict === 'drop' || (verdict === 'wait' && policy === 'BUFFER_ONE' && state.buffered.some((b) => b.cause === 'tick'))) {
        state.overlapSkipped++;
      } else if (verdict === 'wait') {
        state.buffered.push({ scheduledAt: state.cursor, cause: 'tick', overlap: policy === 'BUFFER_ONE' ? 'BUFFER_ONE' : 'BUFFER_ALL' });
      } else {
        if (verdict === 'cancel' || verdict === 'terminate') endOpen(verdict);
        planned.push({ scheduledAt: state.cursor, cause: 'tick' });
        ticks++;
      }
    }
    if (state.remainingActions !== null) state.remainingActions = Math.max(0, state.remainingActions - ticks);
  }
  // 4. The runs: drafts resolved first (nothing written if the workflow cannot be), the overlapped ones ended, one fire.
  let starts: ScheduleStart[];
  try {
    starts = await Promise.all(planned.map(async (p) => ({ ...p, run: await runDraft(deps, s, p.scheduledAt, p.cause) })));
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) {
      // No live replica serves it: retry the ticks (the cursor stays) until one does; the catch-up window still applies.
      deps.logger.warn({ schedule: s.id, namespace: s.namespace, workflow: s.action.workflowName }, 'schedule tick waits: no live replica serves its workflow');
      outcome.schedule = await deps.store.scheduleUpdate({
        namespace: s.namespace, id: s.id, revision: s.revision, leader: deps.leader, changes: { dueAt: new Date(now.getTime() + deps.watchMs) },
      });
      return outcome;
    }
    if (!(error instanceof InvalidInputError)) throw error;
    outcome.paused = `paused: its input no longer passes workflow "${s.action.workflowName}": ${error.message}`;
    starts = [];
  }
  for (const [runId, how] of toEnd) {
    const error: RunError = how === 'cancel'
      ? { name: 'RunCancelledError', reason: 'cancelled', message: `cancelled by schedule ${s.id} (overlap CANCEL_OTHER)` }
      : { name: 'RunTerminatedError', reason: TERMINATED_REASON, message: `terminated by schedule ${s.id} (overlap TERMINATE_OTHER)` };
    await deps.store.runStatusForce({ runId, namespace: s.namespace, status: how === 'cancel' ? 'CANCELLED' : 'FAILED', error });
    outcome.ended.push(runId);
  }
  state.open = state.open.filter((id) => !toEnd.has(id));
  const fired = await deps.store.scheduleFire({
    namespace: s.namespace, id: s.id, revision: s.revision, leader: deps.leader, starts,
    changes: {
      state, dueAt: outcome.paused ? s.dueAt : dueAfter(deps, s, state, starts.length, now),
      ...(outcome.paused ? { paused: true, note: outcome.paused } : {}),
    },
  });
  if (!fired) return outcome;
  outcome.schedule = fired.schedule;
  outcome.started = fired.runs.filter((r) => r.created).map((r) => r.run);
  return outcome;
}

/** When the ticker must look again: the next tick (plus its jitter), sooner for queued starts or an open run it must watch. */
export function dueAfter(deps: Pick<SchedulePassDeps, 'watchMs'>, s: Pick<ScheduleRecord, 'id' | 'spec' | 'policies' | 'createdAt'>, state: ScheduleState, starting: number, now: Date): Date | null {
  const candidates: number[] = [];
  if (state.remainingActions !== 0) {
    const tick = nextTick(s.spec, new Date(state.cursor ?? s.createdAt.toISOString()));
    if (tick) candidates.push(tick.getTime() + tickJitterMs(s.id, tick, s.spec.jitterMs));
  }
  const open = state.open.length + starting > 0;
  if (state.buffered.length > 0 && !open) candidates.push(now.getTime());
  if (open && (state.buffered.length > 0 || s.policies.pauseOnFailure || s.policies.budgetPause)) candidates.push(now.getTime() + deps.watchMs);
  return candidates.length ? new Date(Math.min(...candidates)) : null;
}

async function runDraft(deps: SchedulePassDeps, s: ScheduleRecord, scheduledAt: string, cause: ScheduleCause): Promise<RunCreateParams> {
  const key = `${s.namespace}\u0000${s.action.workflowName}`;
  let definition = deps.definitions.get(key);
  if (!definition) {
    definition = deps.runs.runDefinition(s.namespace, s.action.workflowName);
    deps.definitions.set(key, definition);
  }
  const d = await definition;
  return {
    namespace: s.namespace, workflowName: d.name, workflowVersion: d.version, workflowDigest: d.digest,
    input: d.checkInput(s.action.input),
    labels: { ...s.action.labels, [SCHEDULE_ID_LABEL]: s.id, [SCHEDULED_AT_LABEL]: scheduledAt },
    idempotencyKey: scheduleRunKey(s.id, scheduledAt, cause),
    budgetUsd: s.action.budgetUsd, timeoutMs: s.action.timeoutMs ?? d.timeoutMs,
  };
}
