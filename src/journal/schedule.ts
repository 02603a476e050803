import type { Json } from './run.js';

/*
 * Schedules (docs/schedules.md): runs started on a calendar, one per tick. The shapes here are what
 * a store keeps and the engine decides on; times are ISO-8601 strings (UTC) so a schedule is plain
 * JSON in both stores. No I/O and no cron arithmetic here: the engine's schedules/ room computes times.
 */

/**
 * What happens to a tick while a run this schedule started is still open, as Temporal's
 * ScheduleOverlapPolicy defines them: SKIP (the default) drops the tick; BUFFER_ONE keeps at most
 * one tick to start when the open run ends (later ones are dropped); BUFFER_ALL keeps every tick and
 * starts them one after another; CANCEL_OTHER cancels the open run, then starts; TERMINATE_OTHER
 * terminates it (FAILED, reason `terminated`), then starts; ALLOW_ALL starts at once regardless.
 */
export const OVERLAP_POLICIES = ['SKIP', 'BUFFER_ONE', 'BUFFER_ALL', 'CANCEL_OTHER', 'TERMINATE_OTHER', 'ALLOW_ALL'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/** Every `everyMs` from the Unix epoch plus `offsetMs` (Temporal's IntervalSpec): absolute time, no time zone. */
export interface ScheduleInterval {
  everyMs: number;
  offsetMs: number;
}

/** When a schedule ticks: the union of its cron expressions and intervals, minus its exclusions, within start and end. */
export interface ScheduleSpec {
  /** Cron expressions of 5 fields (minute first) or 6 (second first), read in `timeZone`; `TZ=Zone ` may prefix one. */
  cron: string[];
  intervals: ScheduleInterval[];
  /** IANA time zone the cron expressions and exclusions are read in; default `UTC`. */
  timeZone: string;
  /** ISO time; no tick before it. Null: from creation. */
  startAt: string | null;
  /** ISO time; no tick after it. Null: no end. */
  endAt: string | null;
  /** Each tick's run starts up to this many ms after its scheduled time (a fixed pseudo-random delay per tick). */
  jitterMs: number;
  /** Cron expressions (same zone): a tick they match is not taken. */
  exclude: string[];
}

/** What each tick starts: a run of a workflow or declarative flow. */
export interface ScheduleAction {
  workflowName: string;
  input: Json;
  labels: Record<string, string>;
  budgetUsd: number | null;
  /** The run timeout of each run; null: the definition's. */
  timeoutMs: number | null;
}

/** Pause the schedule when its runs' spend over the trailing window passes the limit (docs/schedules.md "Budget"). */
export interface ScheduleBudgetPause {
  limitUsd: number;
  windowMs: number;
}

export interface SchedulePolicies {
  overlap: OverlapPolicy;
  /** A tick more than this late (nothing ran to take it) is counted missed, not started. */
  catchupWindowMs: number;
  /** A run that ends FAILED pauses the schedule (Temporal's pause_on_failure). */
  pauseOnFailure: boolean;
  budgetPause: ScheduleBudgetPause | null;
}

/** One run a schedule started: for a tick, a trigger or a backfill. */
export interface ScheduleActionTaken {
  scheduledAt: string;
  takenAt: string;
  runId: string;
  /** `tick`, `trigger` or `backfill`. */
  cause: ScheduleCause;
}

export type ScheduleCause = 'tick' | 'trigger' | 'backfill';

/** A start waiting for the schedule's open run to end (BUFFER_ONE, BUFFER_ALL, or a backfill's overlap). */
export interface ScheduleBuffered {
  scheduledAt: string;
  cause: ScheduleCause;
  overlap: OverlapPolicy;
}

/** What the schedule has done; the ticker alone writes it (with the store's fencing). */
export interface ScheduleState {
  /** The last scheduled time the ticker dealt with (taken, buffered, skipped or missed); ticks after it are ahead. Null: none yet. */
  cursor: string | null;
  /** Null: unlimited. At 0 the schedule takes no more ticks (trigger and backfill still start runs). */
  remainingActions: number | null;
  /** Runs this schedule started that had not ended when last looked at. */
  open: string[];
  buffered: ScheduleBuffered[];
  /** The newest ten actions, oldest first. */
  recent: ScheduleActionTaken[];
  actions: number;
  /** Ticks dropped by the overlap policy (SKIP, or a full BUFFER_ONE). */
  overlapSkipped: number;
  /** Ticks found past the catch-up window. */
  missedCatchup: number;
}

/** A schedule as a store holds it. `dueAt` is when the ticker must look at it next (a tick, or an open run to watch). */
export interface ScheduleRecord {
  namespace: string;
  id: string;
  spec: ScheduleSpec;
  action: ScheduleAction;
  policies: SchedulePolicies;
  paused: boolean;
  /** Why it was paused or unpaused, by whom (Temporal's notes). */
  note: string;
  state: ScheduleState;
  dueAt: Date | null;
  /** Moves on every write: updates are compare-and-set on it. */
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

/** How many recent actions a schedule keeps. */
export const SCHEDULE_RECENT_ACTIONS = 10;

/** The labels a run started by a schedule carries (as Temporal's TemporalScheduledById and TemporalScheduledStartTime). */
export const SCHEDULE_ID_LABEL = 'waymark.schedule_id';
export const SCHEDULED_AT_LABEL = 'waymark.scheduled_at';

export function emptyScheduleState(remainingActions: number | null): ScheduleState {
  return { cursor: null, remainingActions, open: [], buffered: [], recent: [], actions: 0, overlapSkipped: 0, missedCatchup: 0 };
}

/**
 * The idempotency key of the run of one scheduled time: the same whoever creates it, so a tick makes
 * one run. A backfill of a time shares the tick's key (a time never runs twice); a trigger has its own.
 */
export function scheduleRunKey(scheduleId: string, scheduledAt: string, cause: ScheduleCause = 'tick'): string {
  return cause === 'trigger' ? `schedule:${scheduleId}:trigger:${scheduledAt}` : `schedule:${scheduleId}:${scheduledAt}`;
}
