import { fromJson, toJson, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate, timestampFromDate, ValueSchema, type Duration } from '@bufbuild/protobuf/wkt';
import type { Client } from '@connectrpc/connect';
import {
  ScheduleOverlapPolicy, type Schedule, type ScheduleSchema, type ScheduleService,
} from './gen/waymark/v1/schedule_service_pb.js';
import type { CallOptions } from './options.js';

/*
 * Schedules (ScheduleService, docs/schedules.md) in plain shapes: a ScheduleDefinition names what
 * the proto's Schedule holds with milliseconds, Dates and policy names, and converts both ways, so
 * an update can change one field of the spec and keep the rest.
 */

/** Temporal's overlap policies by name (docs/schedules.md "Overlap policies"). */
export type OverlapPolicyName = 'SKIP' | 'BUFFER_ONE' | 'BUFFER_ALL' | 'CANCEL_OTHER' | 'TERMINATE_OTHER' | 'ALLOW_ALL';

const OVERLAP: Record<OverlapPolicyName, ScheduleOverlapPolicy> = {
  SKIP: ScheduleOverlapPolicy.SKIP, BUFFER_ONE: ScheduleOverlapPolicy.BUFFER_ONE, BUFFER_ALL: ScheduleOverlapPolicy.BUFFER_ALL,
  CANCEL_OTHER: ScheduleOverlapPolicy.CANCEL_OTHER, TERMINATE_OTHER: ScheduleOverlapPolicy.TERMINATE_OTHER, ALLOW_ALL: ScheduleOverlapPolicy.ALLOW_ALL,
};

/** The enum value of an overlap policy given by name or value (TypeError for an unknown name). */
export function toOverlapPolicy(policy: ScheduleOverlapPolicy | OverlapPolicyName): ScheduleOverlapPolicy {
  if (typeof policy === 'number') return policy;
  const v = OVERLAP[policy];
  if (v === undefined) throw new TypeError(`unknown overlap policy "${String(policy)}"; one of ${Object.keys(OVERLAP).join(', ')}`);
  return v;
}

/** 'SKIP' for ScheduleOverlapPolicy.SKIP; 'UNSPECIFIED' for 0 and values this client does not know. */
export function overlapPolicyName(policy: ScheduleOverlapPolicy): OverlapPolicyName | 'UNSPECIFIED' {
  return (Object.entries(OVERLAP) as [OverlapPolicyName, ScheduleOverlapPolicy][]).find(([, v]) => v === policy)?.[0] ?? 'UNSPECIFIED';
}

/** A schedule as the client writes it; every field but `workflow` and one of `cron` or `intervals` is optional. */
export interface ScheduleDefinition {
  /** The workflow or flow each tick starts. */
  workflow: string;
  /** Its input (checked against the workflow's input schema when the schedule is written). */
  input?: JsonValue | undefined;
  /** Cron expressions of 5 or 6 fields, read in `timeZone`; a `TZ=Zone ` prefix names one's own zone. */
  cron?: string[] | undefined;
  /** Every `everyMs` from the Unix epoch plus `offsetMs` (at least 1 s). */
  intervals?: { everyMs: number; offsetMs?: number | undefined }[] | undefined;
  /** IANA zone of the cron expressions and exclusions; default UTC. */
  timeZone?: string | undefined;
  startAt?: Date | undefined;
  endAt?: Date | undefined;
  jitterMs?: number | undefined;
  /** Cron expressions whose matching ticks are skipped. */
  exclude?: string[] | undefined;
  /** Labels of every run (the `waymark.` prefix is reserved). */
  labels?: Record<string, string> | undefined;
  budgetUsd?: number | undefined;
  /** Each run's timeout; default the workflow's. */
  runTimeoutMs?: number | undefined;
  /** Default SKIP. */
  overlap?: ScheduleOverlapPolicy | OverlapPolicyName | undefined;
  /** Default one minute. */
  catchupWindowMs?: number | undefined;
  pauseOnFailure?: boolean | undefined;
  /** Pause when the runs' spend over the trailing window passes the limit. */
  budgetPause?: { limitUsd: number; windowMs: number } | undefined;
  /** Ticks it takes before it stops; default unlimited. */
  remainingActions?: number | undefined;
  /** Create it paused. */
  paused?: boolean | undefined;
  note?: string | undefined;
}

/** The fields of a definition each update mask path replaces. */
const MASK: Record<'spec' | 'action' | 'policies' | 'remaining_actions', (keyof ScheduleDefinition)[]> = {
  spec: ['cron', 'intervals', 'timeZone', 'startAt', 'endAt', 'jitterMs', 'exclude'],
  action: ['workflow', 'input', 'labels', 'budgetUsd', 'runTimeoutMs'],
  policies: ['overlap', 'catchupWindowMs', 'pauseOnFailure', 'budgetPause'],
  remaining_actions: ['remainingActions'],
};

const ms = (v: number | undefined): Duration | undefined => (v === undefined ? undefined : durationFromMs(v));
const millis = (d: Duration | undefined): number | undefined => (d === undefined ? undefined : Number(d.seconds) * 1000 + Math.round(d.nanos / 1e6));

/** The Schedule message of a definition (`id` given). */
export function scheduleMessage(id: string, d: ScheduleDefinition): MessageInitShape<typeof ScheduleSchema> {
  return {
    id,
    spec: {
      cron: d.cron ?? [], intervals: (d.intervals ?? []).map((iv) => ({ every: durationFromMs(iv.everyMs), offset: ms(iv.offsetMs) })),
      timeZone: d.timeZone ?? '', startTime: d.startAt && timestampFromDate(d.startAt), endTime: d.endAt && timestampFromDate(d.endAt),
      jitter: ms(d.jitterMs), exclude: d.exclude ?? [],
    },
    action: {
      workflow: d.workflow, input: d.input === undefined ? undefined : fromJson(ValueSchema, d.input), labels: d.labels ?? {},
      budgetUsd: d.budgetUsd, timeout: ms(d.runTimeoutMs),
    },
    policies: {
      overlap: d.overlap === undefined ? ScheduleOverlapPolicy.UNSPECIFIED : toOverlapPolicy(d.overlap), catchupWindow: ms(d.catchupWindowMs),
      pauseOnFailure: d.pauseOnFailure ?? false,
      budgetPause: d.budgetPause && { limitUsd: d.budgetPause.limitUsd, window: durationFromMs(d.budgetPause.windowMs) },
    },
    remainingActions: d.remainingActions === undefined ? undefined : BigInt(d.remainingActions),
    paused: d.paused ?? false,
    note: d.note ?? '',
  };
}

/** A stored schedule as a definition (what an update starts from). */
export function scheduleDefinition(s: Schedule): ScheduleDefinition {
  const { spec, action, policies } = s;
  return {
    workflow: action?.workflow ?? '', input: action?.input === undefined ? undefined : toJson(ValueSchema, action.input), labels: { ...action?.labels },
    budgetUsd: action?.budgetUsd, runTimeoutMs: millis(action?.timeout),
    cron: [...(spec?.cron ?? [])], intervals: (spec?.intervals ?? []).map((iv) => ({ everyMs: millis(iv.every) ?? 0, offsetMs: millis(iv.offset) })),
    timeZone: spec?.timeZone, startAt: spec?.startTime && timestampDate(spec.startTime), endAt: spec?.endTime && timestampDate(spec.endTime),
    jitterMs: millis(spec?.jitter), exclude: [...(spec?.exclude ?? [])],
    overlap: policies?.overlap, catchupWindowMs: millis(policies?.catchupWindow), pauseOnFailure: policies?.pauseOnFailure ?? false,
    budgetPause: policies?.budgetPause && { limitUsd: policies.budgetPause.limitUsd, windowMs: millis(policies.budgetPause.window) ?? 0 },
    remainingActions: s.remainingActions === undefined ? undefined : Number(s.remainingActions),
    paused: s.paused, note: s.note,
  };
}

/**
 * The update of `changes` over `current`: the mask paths whose fields `changes` names (a key
 * present with the value undefined clears that field), and the schedule they are read from.
 */
export function scheduleUpdate(current: Schedule, changes: Partial<ScheduleDefinition>): { paths: string[]; schedule: MessageInitShape<typeof ScheduleSchema> } {
  const paths = (Object.entries(MASK) as [string, (keyof ScheduleDefinition)[]][]).filter(([, keys]) => keys.some((k) => k in changes)).map(([p]) => p);
  if (paths.length === 0) throw new TypeError('nothing to update: name a field of the spec, the action, the policies or remainingActions');
  return { paths, schedule: scheduleMessage(current.id, { ...scheduleDefinition(current), ...changes } as ScheduleDefinition) };
}

/** What trigger and backfill take. */
export interface ScheduleStartOptions extends CallOptions {
  /** The overlap policy of these starts; default the schedule's. */
  overlap?: ScheduleOverlapPolicy | OverlapPolicyName | undefined;
}

export interface ScheduleListOptions extends CallOptions {
  pageSize?: number | undefined;
}

export type ScheduleServiceClient = Client<typeof ScheduleService>;
