// schedules/: Schedules, the ScheduleService use cases: create, read, list, update, pause, unpause, trigger, backfill, delete.
// Must not start a run itself: trigger and backfill queue starts the ticker makes (schedule-pass.ts), so every run comes from one fenced fire.
import { ScheduleNotFoundError } from '../../journal/errors.js';
import {
  emptyScheduleState, type OverlapPolicy, type ScheduleAction, type SchedulePolicies, type ScheduleRecord, type ScheduleSpec,
} from '../../journal/schedule.js';
import type { JournalStore, ScheduleChanges, ScheduleCreateParams } from '../../store/store.js';
import { InvalidDeclarationError } from '../errors.js';
import { decodePageToken, encodePageToken } from '../read/page-token.js';
import type { RunEngine } from '../run-engine.js';
import { dueAfter } from './schedule-pass.js';
import { nextTicks, scheduleSpecViolations, ticksBetween } from './schedule-times.js';

/** A schedule and its next times (GetSchedule's answer). */
export interface ScheduleView {
  schedule: ScheduleRecord;
  nextTimes: Date[];
}

/** CreateSchedule's request: a schedule as stored less its state, plus its remaining actions (null: unlimited). */
export type ScheduleCreate = Omit<ScheduleCreateParams, 'state' | 'dueAt'> & { remainingActions: number | null };

export interface ScheduleEdit {
  namespace: string;
  id: string;
  spec?: ScheduleSpec;
  action?: ScheduleAction;
  policies?: SchedulePolicies;
  /** Undefined: kept; null: unlimited. */
  remainingActions?: number | null;
}

export const SCHEDULES_DEFAULTS = {
  /** How many next times GetSchedule shows (as Temporal's ScheduleInfo.future_action_times). */
  nextTimes: 10,
  /** Most ticks one backfill may queue. */
  maxBackfill: 1_000,
  /** Compare-and-set attempts of one change before giving up (a ticker writing the schedule at the same time). */
  attempts: 20,
  /** As the ticker's watchMs: how soon an open run it must watch is looked at (dueAt of an edited schedule). */
  watchMs: 1_000,
} as const;

export class Schedules {
  constructor(private readonly options: { store: JournalStore; runs: RunEngine }) {}

  /** Checks the spec and that the workflow exists and takes the input, then stores it; its first tick is after now. */
  async create(params: ScheduleCreate): Promise<ScheduleView> {
    await this.check(params.namespace, params.spec, params.action);
    const now = await this.options.store.clockNow();
    const state = { ...emptyScheduleState(params.remainingActions), cursor: later(params.spec.startAt, now) };
    const record = await this.options.store.scheduleCreate({
      namespace: params.namespace, id: params.id, spec: params.spec, action: params.action, policies: params.policies, paused: params.paused,
      note: params.note, state, dueAt: dueAfter(SCHEDULES_DEFAULTS, { ...params, createdAt: now }, state, 0, now),
    });
    return this.view(record);
  }

  async get(params: { namespace: string; id: string }): Promise<ScheduleView> {
    const found = await this.options.store.scheduleGet(params);
    if (!found) throw new ScheduleNotFoundError(params.id);
    return this.view(found);
  }

  /** By id, each with its next time only; `pageToken` as the previous page's nextPageToken (empty on the last page). */
  async list(params: { namespace: string; pageSize: number; pageToken: string }): Promise<{ schedules: ScheduleView[]; nextPageToken: string }> {
    const filter = { namespace: params.namespace };
    const after = decodePageToken(params.pageToken, 'schedules', filter);
    const page = await this.options.store.scheduleList({ namespace: params.namespace, pageSize: params.pageSize + 1, after });
    const schedules = page.slice(0, params.pageSize).map((s) => this.view(s, 1));
    const more = page.length > params.pageSize;
    return { schedules, nextPageToken: more ? encodePageToken('schedules', filter, schedules[schedules.length - 1]!.schedule.id) : '' };
  }

  /** Replaces what it is given; a new spec ticks from now on (ticks it would have had in the past are not caught up). */
  async update(params: ScheduleEdit): Promise<ScheduleView> {
    if (params.spec || params.action) {
      const current = await this.get(params);
      await this.check(params.namespace, params.spec ?? current.schedule.spec, params.action ?? current.schedule.action);
    }
    return this.change(params, (s, now) => {
      const state = structuredClone(s.state);
      if (params.spec) state.cursor = laterIso(state.cursor, now);
      if (params.remainingActions !== undefined) state.remainingActions = params.remainingActions;
      const next = { ...s, ...definedOnly({ spec: params.spec, action: params.action, policies: params.policies }), state };
      return { ...definedOnly({ spec: params.spec, action: params.action, policies: params.policies }), state, dueAt: dueAfter(SCHEDULES_DEFAULTS, next, state, 0, now) };
    });
  }

  async pause(params: { namespace: string; id: string; note: string }): Promise<ScheduleView> {
    return this.change(params, () => ({ paused: true, note: params.note }));
  }

  /** Ticks that fell while it was paused are neither started nor caught up (as Temporal's unpause). */
  async unpause(params: { namespace: string; id: string; note: string }): Promise<ScheduleView> {
    return this.change(params, (s, now) => {
      const state = { ...structuredClone(s.state), cursor: laterIso(s.state.cursor, now) };
      return { paused: false, note: params.note, state, dueAt: dueAfter(SCHEDULES_DEFAULTS, s, state, 0, now) };
    });
  }

  /** Queues one start now under `overlap` (default: the schedule's); the ticker starts it. */
  async trigger(params: { namespace: string; id: string; overlap: OverlapPolicy | null }): Promise<ScheduleView> {
    return this.change(params, (s, now) => {
      const state = structuredClone(s.state);
      state.buffered.push({ scheduledAt: now.toISOString(), cause: 'trigger', overlap: params.overlap ?? s.policies.overlap });
      return { state, dueAt: now };
    });
  }

  /** Queues a start for every tick in [start, end] under `overlap` (default: the schedule's); a time that already ran is not run again. */
  async backfill(params: { namespace: string; id: string; start: Date; end: Date; overlap: OverlapPolicy | null }): Promise<ScheduleView & { queued: number }> {
    let queued = 0;
    const view = await this.change(params, (s, now) => {
      const times = ticksBetween(s.spec, params.start, params.end, SCHEDULES_DEFAULTS.maxBackfill + 1);
      if (times.length > SCHEDULES_DEFAULTS.maxBackfill) {
        throw new InvalidDeclarationError('the backfill', [{ field: 'end_time', description: `the range holds more than ${SCHEDULES_DEFAULTS.maxBackfill} ticks; backfill it in parts` }]);
      }
      const state = structuredClone(s.state);
      for (const t of times) state.buffered.push({ scheduledAt: t.toISOString(), cause: 'backfill', overlap: params.overlap ?? s.policies.overlap });
      queued = times.length;
      return { state, dueAt: now };
    });
    return { ...view, queued };
  }

  async delete(params: { namespace: string; id: string }): Promise<void> {
    if (!(await this.options.store.scheduleDelete(params))) throw new ScheduleNotFoundError(params.id);
  }

  private async check(namespace: string, spec: ScheduleSpec, action: ScheduleAction): Promise<void> {
    const violations = scheduleSpecViolations(spec);
    if (violations.length > 0) throw new InvalidDeclarationError('the schedule', violations);
    (await this.options.runs.runDefinition(namespace, action.workflowName)).checkInput(action.input);
  }

  /** Read, change, compare-and-set; again while a concurrent write (the ticker's) moved the revision. */
  private async change(key: { namespace: string; id: string }, changes: (s: ScheduleRecord, now: Date) => ScheduleChanges): Promise<ScheduleView> {
    for (let i = 0; i < SCHEDULES_DEFAULTS.attempts; i++) {
      const current = await this.options.store.scheduleGet(key);
      if (!current) throw new ScheduleNotFoundError(key.id);
      const now = await this.options.store.clockNow();
      const written = await this.options.store.scheduleUpdate({ ...key, revision: current.revision, changes: changes(current, now) });
      if (written) return this.view(written);
    }
    throw new Error(`schedule ${key.id} kept changing under ${SCHEDULES_DEFAULTS.attempts} attempts to write it; try again`);
  }

  private view(schedule: ScheduleRecord, count: number = SCHEDULES_DEFAULTS.nextTimes): ScheduleView {
    const { state } = schedule;
    const nextTimes = state.remainingActions === 0 ? [] : nextTicks(schedule.spec, new Date(state.cursor ?? schedule.createdAt.toISOString()), count);
    return { schedule, nextTimes: state.remainingActions === null ? nextTimes : nextTimes.slice(0, state.remainingActions) };
  }
}

function later(startAt: string | null, now: Date): string {
  return startAt !== null && Date.parse(startAt) - 1 > now.getTime() ? new Date(Date.parse(startAt) - 1).toISOString() : now.toISOString();
}

function laterIso(cursor: string | null, now: Date): string {
  return cursor !== null && Date.parse(cursor) > now.getTime() ? cursor : now.toISOString();
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
