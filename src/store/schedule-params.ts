import type { Run } from '../journal/run.js';
import type {
  ScheduleAction, ScheduleCause, SchedulePolicies, ScheduleRecord, ScheduleSpec, ScheduleState,
} from '../journal/schedule.js';
import type { RunCreateParams, RunCreateResult } from './run-params.js';
import type { SweeperLease } from './sweeper-params.js';

/* Parameters and results of the schedule methods (ScheduleOps, at the end of this file, says what each does). */

export interface ScheduleKeyParams {
  namespace: string;
  id: string;
}

/** A schedule as created: the record less what the store sets (revision, times). */
export type ScheduleCreateParams = Omit<ScheduleRecord, 'revision' | 'createdAt' | 'updatedAt'>;

export interface ScheduleListParams {
  namespace: string;
  pageSize: number;
  /** The last id of the previous page; null or absent: the first page. */
  after?: string | null;
}

/** The fields a write replaces; absent ones are kept. */
export interface ScheduleChanges {
  spec?: ScheduleSpec;
  action?: ScheduleAction;
  policies?: SchedulePolicies;
  paused?: boolean;
  note?: string;
  state?: ScheduleState;
  dueAt?: Date | null;
}

export interface ScheduleUpdateParams extends ScheduleKeyParams {
  /** Compare-and-set: the write happens only while the schedule is at this revision. */
  revision: number;
  changes: ScheduleChanges;
  /** The sweeper's fence (the ticker's writes): SweeperLeaseLostError, writing nothing, unless this is the current leader lease. */
  leader?: SweeperLease;
}

/** One run to start for a scheduled time, with why. */
export interface ScheduleStart {
  scheduledAt: string;
  cause: ScheduleCause;
  /** Must carry an idempotency key (scheduleRunKey): a repeated fire returns the first run. */
  run: RunCreateParams;
}

export interface ScheduleFireParams extends ScheduleUpdateParams {
  /** Created in order, in the same transaction as the update; each becomes an open run and a recent action of `changes.state`. */
  starts: ScheduleStart[];
}

export interface ScheduleFireResult {
  schedule: ScheduleRecord;
  runs: RunCreateResult[];
}

export interface ScheduleListDueParams {
  /** Schedules due within this many ms from the store's clock (0: due now). */
  horizonMs: number;
  limit: number;
}

export interface ScheduleListDueResult {
  /** Not paused, `dueAt` within the horizon, earliest first. */
  schedules: ScheduleRecord[];
  /** The store's clock when it looked. */
  now: Date;
}

export interface ScheduleRunsParams {
  namespace: string;
  runIds: string[];
}

/**
 * Schedules (docs/schedules.md). Part of JournalStore (store.ts), whose contract holds for each
 * method. Every write moves `revision` and is compare-and-set on it, so a ticker and an API call
 * writing the same schedule never lose each other's change: the loser reads again and retries.
 */
export interface ScheduleOps {
  /** ScheduleExistsError when the namespace has a schedule of that id. */
  scheduleCreate(params: ScheduleCreateParams): Promise<ScheduleRecord>;
  /** Null when the namespace has no schedule of that id. */
  scheduleGet(params: ScheduleKeyParams): Promise<ScheduleRecord | null>;
  /** By id; `after` pages. */
  scheduleList(params: ScheduleListParams): Promise<ScheduleRecord[]>;
  /** The schedule as written; null when it is gone or its revision moved (read again and retry). */
  scheduleUpdate(params: ScheduleUpdateParams): Promise<ScheduleRecord | null>;
  /**
   * scheduleUpdate and the runs of `starts`, one atomic step fenced by `leader` when given: either
   * the runs exist (each once per idempotency key) and the state records them, or nothing changed.
   * Null when the revision moved (nothing written).
   */
  scheduleFire(params: ScheduleFireParams): Promise<ScheduleFireResult | null>;
  /** Whether it was removed. Runs it started are kept. */
  scheduleDelete(params: ScheduleKeyParams): Promise<boolean>;
  /** What the ticker acts on next (all namespaces). */
  scheduleListDue(params: ScheduleListDueParams): Promise<ScheduleListDueResult>;
  /** The runs of `runIds` that exist in the namespace (any status), for the ticker's look at open runs. */
  scheduleRuns(params: ScheduleRunsParams): Promise<Run[]>;
}
