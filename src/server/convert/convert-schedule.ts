import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate, timestampFromDate, type Duration, type Timestamp } from '@bufbuild/protobuf/wkt';
import { scheduleSpecViolations, type ScheduleView } from '../../engine/index.js';
import {
  ScheduleActionCause, ScheduleOverlapPolicy, ScheduleSchema,
  type Schedule, type ScheduleAction as ProtoAction, type SchedulePolicies as ProtoPolicies, type ScheduleSpec as ProtoSpec,
} from '../../gen/waymark/v1/schedule_service_pb.js';
import {
  OVERLAP_POLICIES, SCHEDULE_ID_LABEL, SCHEDULED_AT_LABEL,
  type OverlapPolicy, type ScheduleAction, type ScheduleCause, type SchedulePolicies, type ScheduleSpec,
} from '../../journal/schedule.js';
import { optionalValue } from './convert-json.js';
import type { RequestCheck } from './request-validation.js';

/* ScheduleService's messages <-> the engine's schedules (docs/schedules.md); every problem is a violation of `c` naming the request field. */

const SCHEDULE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_EXPRESSIONS = 64;
const MAX_EXPRESSION_CHARS = 256;
/** The catch-up window of a schedule that names none (as Temporal's SDKs default it). */
export const DEFAULT_CATCHUP_WINDOW_MS = 60_000;
const MIN_WINDOW_MS = 1_000;
/** Ten years: longer windows and jitters are mistakes, and bounded numbers keep the arithmetic exact. */
const MAX_DURATION_MS = 3650 * 86_400_000;

const OVERLAP_FROM_PROTO: Partial<Record<ScheduleOverlapPolicy, OverlapPolicy>> = {
  [ScheduleOverlapPolicy.SKIP]: 'SKIP', [ScheduleOverlapPolicy.BUFFER_ONE]: 'BUFFER_ONE', [ScheduleOverlapPolicy.BUFFER_ALL]: 'BUFFER_ALL',
  [ScheduleOverlapPolicy.CANCEL_OTHER]: 'CANCEL_OTHER', [ScheduleOverlapPolicy.TERMINATE_OTHER]: 'TERMINATE_OTHER', [ScheduleOverlapPolicy.ALLOW_ALL]: 'ALLOW_ALL',
};
const OVERLAP_TO_PROTO = Object.fromEntries(Object.entries(OVERLAP_FROM_PROTO).map(([k, v]) => [v, Number(k)])) as Record<OverlapPolicy, ScheduleOverlapPolicy>;
const CAUSE_TO_PROTO: Record<ScheduleCause, ScheduleActionCause> = {
  tick: ScheduleActionCause.TICK, trigger: ScheduleActionCause.TRIGGER, backfill: ScheduleActionCause.BACKFILL,
};

export function scheduleId(c: RequestCheck, field: string, value: string): string {
  if (value === '') c.fail(field, 'is required');
  else if (!SCHEDULE_ID.test(value)) c.fail(field, 'must be 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');
  return value;
}

/** An overlap policy of a request; null for UNSPECIFIED (the default applies). */
export function overlapFromProto(c: RequestCheck, field: string, value: ScheduleOverlapPolicy): OverlapPolicy | null {
  if (value === ScheduleOverlapPolicy.UNSPECIFIED) return null;
  const policy = OVERLAP_FROM_PROTO[value];
  if (!policy) c.fail(field, `unknown value ${value}; expected one of ${OVERLAP_POLICIES.join(', ')}`);
  return policy ?? null;
}

/** A duration in whole milliseconds (a fraction rounded up), from 0 to ten years; null when unset or invalid. */
function durationOf(c: RequestCheck, field: string, value: Duration | undefined): number | null {
  if (value === undefined) return null;
  const { seconds, nanos } = value;
  if (!Number.isInteger(nanos) || nanos <= -1_000_000_000 || nanos >= 1_000_000_000 || seconds < 0n || nanos < 0) {
    c.fail(field, 'must be a duration of 0 or more (nanos within 0..999,999,999)');
    return null;
  }
  if (seconds > BigInt(MAX_DURATION_MS / 1000)) {
    c.fail(field, `must be at most ${MAX_DURATION_MS / 86_400_000} days`);
    return null;
  }
  return Number(seconds) * 1000 + Math.ceil(nanos / 1_000_000);
}

function timeOf(c: RequestCheck, field: string, value: Timestamp | undefined): string | null {
  if (value === undefined) return null;
  const date = timestampDate(value);
  if (Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1970 || date.getUTCFullYear() > 9999) {
    c.fail(field, 'must be a time between 1970 and 9999');
    return null;
  }
  return date.toISOString();
}

function expressions(c: RequestCheck, field: string, list: string[]): string[] {
  if (list.length > MAX_EXPRESSIONS) c.fail(field, `at most ${MAX_EXPRESSIONS} expressions`);
  list.forEach((e, i) => c.text(`${field}[${i}]`, e, { required: true, max: MAX_EXPRESSION_CHARS }));
  return [...list];
}

/** A request's spec; `field` is where it sits (`schedule.spec`). Includes the engine's own check (cron syntax, time zone, ranges). */
export function specFromProto(c: RequestCheck, field: string, spec: ProtoSpec | undefined): ScheduleSpec {
  if (!spec) {
    c.fail(field, 'is required: cron expressions or intervals');
    return { cron: [], intervals: [], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] };
  }
  if (spec.intervals.length > MAX_EXPRESSIONS) c.fail(`${field}.intervals`, `at most ${MAX_EXPRESSIONS} intervals`);
  const out: ScheduleSpec = {
    cron: expressions(c, `${field}.cron`, spec.cron),
    intervals: spec.intervals.map((iv, i) => {
      const everyMs = durationOf(c, `${field}.intervals[${i}].every`, iv.every);
      if (everyMs === null && iv.every === undefined) c.fail(`${field}.intervals[${i}].every`, 'is required');
      return { everyMs: everyMs ?? 1_000, offsetMs: durationOf(c, `${field}.intervals[${i}].offset`, iv.offset) ?? 0 };
    }),
    timeZone: spec.timeZone === '' ? 'UTC' : c.text(`${field}.time_zone`, spec.timeZone, { max: 64 }),
    startAt: timeOf(c, `${field}.start_time`, spec.startTime),
    endAt: timeOf(c, `${field}.end_time`, spec.endTime),
    jitterMs: durationOf(c, `${field}.jitter`, spec.jitter) ?? 0,
    exclude: expressions(c, `${field}.exclude`, spec.exclude),
  };
  // The engine's check reads what the syntax checks above let through; its fields are named under `field`.
  if (c.violations.length === 0) for (const v of scheduleSpecViolations(out, field)) c.fail(v.field, v.description);
  return out;
}

/** A request's action; the input is checked against the workflow by the engine. */
export function actionFromProto(c: RequestCheck, field: string, action: ProtoAction | undefined): ScheduleAction {
  if (!action) {
    c.fail(field, 'is required: the workflow (or flow) each tick starts');
    return { workflowName: '', input: null, labels: {}, budgetUsd: null, timeoutMs: null };
  }
  const labels = c.labels(`${field}.labels`, action.labels);
  for (const key of Object.keys(labels)) {
    if (key.startsWith('waymark.')) c.fail(`${field}.labels[${key}]`, `the "waymark." prefix is reserved (each run gets ${SCHEDULE_ID_LABEL} and ${SCHEDULED_AT_LABEL})`);
  }
  if (action.budgetUsd !== undefined && !(Number.isFinite(action.budgetUsd) && action.budgetUsd >= 0)) c.fail(`${field}.budget_usd`, 'must be a finite number >= 0');
  const input = c.json(`${field}.input`, action.input);
  c.forbiddenKeys(`${field}.input`, input);
  return {
    workflowName: c.workflow(`${field}.workflow`, action.workflow), input, labels: { ...labels },
    budgetUsd: action.budgetUsd ?? null, timeoutMs: c.runTimeout(`${field}.timeout`, action.timeout),
  };
}

export function policiesFromProto(c: RequestCheck, field: string, policies: ProtoPolicies | undefined): SchedulePolicies {
  const catchup = durationOf(c, `${field}.catchup_window`, policies?.catchupWindow);
  if (catchup !== null && catchup < MIN_WINDOW_MS) c.fail(`${field}.catchup_window`, 'must be at least 1s (unset: one minute)');
  let budgetPause: SchedulePolicies['budgetPause'] = null;
  const b = policies?.budgetPause;
  if (b) {
    if (!(Number.isFinite(b.limitUsd) && b.limitUsd > 0)) c.fail(`${field}.budget_pause.limit_usd`, 'must be a finite number > 0');
    const windowMs = durationOf(c, `${field}.budget_pause.window`, b.window);
    if (windowMs === null || windowMs < MIN_WINDOW_MS) c.fail(`${field}.budget_pause.window`, 'is required: at least 1s');
    budgetPause = { limitUsd: b.limitUsd, windowMs: windowMs ?? MIN_WINDOW_MS };
  }
  return {
    overlap: overlapFromProto(c, `${field}.overlap`, policies?.overlap ?? ScheduleOverlapPolicy.UNSPECIFIED) ?? 'SKIP',
    catchupWindowMs: catchup ?? DEFAULT_CATCHUP_WINDOW_MS,
    pauseOnFailure: policies?.pauseOnFailure ?? false,
    budgetPause,
  };
}

export function remainingFromProto(c: RequestCheck, field: string, value: bigint | undefined): number | null {
  if (value === undefined) return null;
  if (value < 0n || value > 2_147_483_647n) {
    c.fail(field, 'must be from 0 to 2147483647 (unset: unlimited)');
    return null;
  }
  return Number(value);
}

const ms = (v: number | null): Duration | undefined => (v === null ? undefined : durationFromMs(v));
const at = (iso: string | null): Timestamp | undefined => (iso === null ? undefined : timestampFromDate(new Date(iso)));

export function scheduleToProto({ schedule: s, nextTimes }: ScheduleView): Schedule {
  const { spec, action, policies, state } = s;
  return create(ScheduleSchema, {
    namespace: s.namespace, id: s.id, paused: s.paused, note: s.note,
    spec: {
      cron: spec.cron, intervals: spec.intervals.map((iv) => ({ every: durationFromMs(iv.everyMs), offset: ms(iv.offsetMs || null) })),
      timeZone: spec.timeZone, startTime: at(spec.startAt), endTime: at(spec.endAt), jitter: ms(spec.jitterMs || null), exclude: spec.exclude,
    },
    action: {
      workflow: action.workflowName, input: optionalValue(action.input), labels: action.labels,
      ...(action.budgetUsd !== null ? { budgetUsd: action.budgetUsd } : {}), timeout: ms(action.timeoutMs),
    },
    policies: {
      overlap: OVERLAP_TO_PROTO[policies.overlap], catchupWindow: durationFromMs(policies.catchupWindowMs), pauseOnFailure: policies.pauseOnFailure,
      ...(policies.budgetPause ? { budgetPause: { limitUsd: policies.budgetPause.limitUsd, window: durationFromMs(policies.budgetPause.windowMs) } } : {}),
    },
    ...(state.remainingActions !== null ? { remainingActions: BigInt(state.remainingActions) } : {}),
    info: {
      actionCount: BigInt(state.actions), missedCatchupWindow: BigInt(state.missedCatchup), overlapSkipped: BigInt(state.overlapSkipped),
      runningRunIds: state.open,
      recentActions: state.recent.map((a) => ({
        scheduleTime: timestampFromDate(new Date(a.scheduledAt)), actualTime: timestampFromDate(new Date(a.takenAt)), runId: a.runId, cause: CAUSE_TO_PROTO[a.cause],
      })),
      futureActionTimes: nextTimes.map((t) => timestampFromDate(t)),
      bufferedActions: state.buffered.length,
      createTime: timestampFromDate(s.createdAt), updateTime: timestampFromDate(s.updatedAt),
    },
  });
}
