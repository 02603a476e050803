// schedules/: when a schedule ticks: its cron expressions (croner, in the spec's time zone) and intervals, within start and end, minus exclusions.
// Pure: no store, no clock; `after` is always given. Daylight saving follows croner (docs/schedules.md "Daylight saving").
import { Cron } from 'croner';
import type { ScheduleSpec } from '../../journal/schedule.js';
import type { FieldViolation } from '../errors.js';
import { sha256Hex } from '../replay/content-key.js';

/*
 * Daylight saving (pinned by test/schedules/daylight-saving.test.ts): a wall-clock time that does not
 * exist that day (spring forward) ticks once, at the first instant after the gap; a wall-clock time
 * that occurs twice (fall back) ticks once, at its first occurrence, for an expression with a fixed
 * hour. An expression whose hour is a wildcard or a step keeps ticking through the repeated hour,
 * because each of those ticks is a distinct instant (as Vixie cron does). Intervals are absolute.
 */

/** How far nextTick looks past excluded candidates before it gives up (an exclusion that covers everything). */
const MAX_EXCLUDED = 10_000;
const compiled = new Map<string, Cron>();

/** A cron expression read in `zone`; a `TZ=Zone ` prefix (as Inngest writes them) names the expression's own zone. */
function cronOf(expression: string, zone: string): Cron {
  const key = `${zone}\u0000${expression}`;
  let cron = compiled.get(key);
  if (!cron) {
    const prefixed = /^(?:CRON_)?TZ=(\S+)\s+(.*)$/.exec(expression.trim());
    cron = new Cron(prefixed ? prefixed[2]! : expression.trim(), { timezone: prefixed ? prefixed[1]! : zone, paused: true, mode: '5-or-6-parts' });
    if (compiled.size > 50_000) compiled.clear();
    compiled.set(key, cron);
  }
  return cron;
}

/** The first candidate tick strictly after `after`, ignoring exclusions and the end. */
function nextCandidate(spec: ScheduleSpec, after: Date): Date | null {
  let best: number | null = null;
  for (const expression of spec.cron) {
    const next = cronOf(expression, spec.timeZone).nextRun(after);
    if (next && (best === null || next.getTime() < best)) best = next.getTime();
  }
  for (const { everyMs, offsetMs } of spec.intervals) {
    const k = Math.floor((after.getTime() - offsetMs) / everyMs) + 1;
    const next = k * everyMs + offsetMs;
    if (best === null || next < best) best = next;
  }
  return best === null ? null : new Date(best);
}

function excluded(spec: ScheduleSpec, at: Date): boolean {
  return spec.exclude.some((expression) => cronOf(expression, spec.timeZone).match(at));
}

/** The earliest tick strictly after `after` (and not before the start), or null when none remains before the end. */
export function nextTick(spec: ScheduleSpec, after: Date): Date | null {
  const start = spec.startAt === null ? null : Date.parse(spec.startAt);
  let cursor = start !== null && start - 1 > after.getTime() ? new Date(start - 1) : after;
  for (let i = 0; i < MAX_EXCLUDED; i++) {
    const next = nextCandidate(spec, cursor);
    if (next === null || (spec.endAt !== null && next.getTime() > Date.parse(spec.endAt))) return null;
    if (!excluded(spec, next)) return next;
    cursor = next;
  }
  return null;
}

/** Up to `count` ticks after `after`, in order. */
export function nextTicks(spec: ScheduleSpec, after: Date, count: number): Date[] {
  const out: Date[] = [];
  let cursor: Date | null = after;
  while (out.length < count && (cursor = nextTick(spec, cursor)) !== null) out.push(cursor);
  return out;
}

/** The ticks in [from, to], in order, up to `limit` (a backfill's range). */
export function ticksBetween(spec: ScheduleSpec, from: Date, to: Date, limit: number): Date[] {
  const out: Date[] = [];
  let cursor: Date | null = new Date(from.getTime() - 1);
  while (out.length < limit && (cursor = nextTick(spec, cursor)) !== null && cursor.getTime() <= to.getTime()) out.push(cursor);
  return out;
}

/**
 * The delay of one tick's start within the jitter: fixed per (schedule, scheduled time), so every
 * sweeper that computes it agrees, and spread evenly over [0, jitterMs).
 */
export function tickJitterMs(scheduleId: string, scheduledAt: Date, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  return parseInt(sha256Hex(`${scheduleId}\u0000${scheduledAt.toISOString()}`).slice(0, 12), 16) % jitterMs;
}

/** What is wrong with a spec, field by field (the request's field names); empty when it can tick. */
export function scheduleSpecViolations(spec: ScheduleSpec, field = 'spec'): FieldViolation[] {
  const out: FieldViolation[] = [];
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: spec.timeZone });
  } catch {
    out.push({ field: `${field}.time_zone`, description: `"${spec.timeZone}" is not an IANA time zone (e.g. "Europe/Berlin", "UTC")` });
    return out;
  }
  const cronCheck = (list: string[], name: string) => list.forEach((expression, i) => {
    try {
      cronOf(expression, spec.timeZone).nextRun(new Date(0));
    } catch (error) {
      out.push({ field: `${field}.${name}[${i}]`, description: `"${expression}" is not a cron expression of 5 or 6 fields: ${(error as Error).message}` });
    }
  });
  cronCheck(spec.cron, 'cron');
  cronCheck(spec.exclude, 'exclude');
  spec.intervals.forEach((iv, i) => {
    if (!Number.isInteger(iv.everyMs) || iv.everyMs < 1000) out.push({ field: `${field}.intervals[${i}].every`, description: 'must be at least 1s' });
    if (!Number.isInteger(iv.offsetMs) || iv.offsetMs < 0 || iv.offsetMs >= iv.everyMs) out.push({ field: `${field}.intervals[${i}].offset`, description: 'must be at least 0 and less than every' });
  });
  if (spec.cron.length + spec.intervals.length === 0) out.push({ field, description: 'needs at least one cron expression or interval' });
  if (!Number.isInteger(spec.jitterMs) || spec.jitterMs < 0) out.push({ field: `${field}.jitter`, description: 'must be 0 or more' });
  for (const key of ['startAt', 'endAt'] as const) {
    if (spec[key] !== null && Number.isNaN(Date.parse(spec[key]))) out.push({ field: `${field}.${key === 'startAt' ? 'start_time' : 'end_time'}`, description: 'must be a time' });
  }
  if (spec.startAt && spec.endAt && Date.parse(spec.endAt) < Date.parse(spec.startAt)) out.push({ field: `${field}.end_time`, description: 'must not be before start_time' });
  return out;
}
