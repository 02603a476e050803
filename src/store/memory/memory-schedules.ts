import { ScheduleExistsError } from '../../journal/errors.js';
import type { Run } from '../../journal/run.js';
import type { ScheduleRecord } from '../../journal/schedule.js';
import { KeyedMutex } from '../keyed-mutex.js';
import { recordStarts } from '../schedule-starts.js';
import type {
  RunCreateParams, RunCreateResult, ScheduleCreateParams, ScheduleFireParams, ScheduleFireResult, ScheduleKeyParams,
  ScheduleListDueParams, ScheduleListDueResult, ScheduleListParams, ScheduleOps, ScheduleRunsParams, ScheduleUpdateParams, SweeperLease,
} from '../store.js';

/* The memory store's schedules (docs/schedules.md), as the `schedules` table of migration 0017 holds them. */

export interface MemorySchedulesDeps {
  now: () => Date;
  runCreate: (params: RunCreateParams) => Promise<RunCreateResult>;
  run: (runId: string) => Run | undefined;
  sweeperFence: (lease: SweeperLease | undefined) => void;
}

export class MemorySchedules {
  private readonly schedules = new Map<string, ScheduleRecord>();
  /** scheduleFire creates runs across awaits: one fire per schedule at a time, as the row lock serialises them in Postgres. */
  private readonly locks = new KeyedMutex();

  constructor(private readonly deps: MemorySchedulesDeps) {}

  scheduleCreate(params: ScheduleCreateParams): ScheduleRecord {
    const key = keyOf(params);
    if (this.schedules.has(key)) throw new ScheduleExistsError(params.id);
    const now = this.deps.now();
    const record: ScheduleRecord = { ...structuredClone(params), revision: 1, createdAt: now, updatedAt: now };
    this.schedules.set(key, record);
    return structuredClone(record);
  }

  scheduleGet(params: ScheduleKeyParams): ScheduleRecord | null {
    const found = this.schedules.get(keyOf(params));
    return found ? structuredClone(found) : null;
  }

  scheduleList(params: ScheduleListParams): ScheduleRecord[] {
    return [...this.schedules.values()]
      .filter((s) => s.namespace === params.namespace && (params.after == null || s.id > params.after))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .slice(0, params.pageSize)
      .map((s) => structuredClone(s));
  }

  scheduleUpdate(params: ScheduleUpdateParams): ScheduleRecord | null {
    this.deps.sweeperFence(params.leader);
    const found = this.schedules.get(keyOf(params));
    if (!found || found.revision !== params.revision) return null;
    const updated: ScheduleRecord = {
      ...found, ...structuredClone(params.changes), revision: found.revision + 1, updatedAt: this.deps.now(),
    };
    this.schedules.set(keyOf(params), updated);
    return structuredClone(updated);
  }

  async scheduleFire(params: ScheduleFireParams): Promise<ScheduleFireResult | null> {
    const release = await this.locks.acquire(keyOf(params));
    try {
      this.deps.sweeperFence(params.leader);
      const found = this.schedules.get(keyOf(params));
      if (!found || found.revision !== params.revision) return null;
      const runs: RunCreateResult[] = [];
      for (const start of params.starts) runs.push(await this.deps.runCreate(start.run));
      // Fenced again after the awaits: a takeover in between must not see this write land.
      this.deps.sweeperFence(params.leader);
      const state = recordStarts(params.changes.state ?? found.state, params.starts, runs, this.deps.now());
      const schedule = this.scheduleUpdate({ ...params, changes: { ...params.changes, state } });
      if (!schedule) throw new Error(`schedule ${params.id} changed while it fired, under its lock`);
      return { schedule, runs };
    } finally {
      release();
    }
  }

  scheduleDelete(params: ScheduleKeyParams): boolean {
    return this.schedules.delete(keyOf(params));
  }

  scheduleListDue(params: ScheduleListDueParams): ScheduleListDueResult {
    const now = this.deps.now();
    const horizon = now.getTime() + params.horizonMs;
    const schedules = [...this.schedules.values()]
      .filter((s) => !s.paused && s.dueAt !== null && s.dueAt.getTime() <= horizon)
      .sort((a, b) => a.dueAt!.getTime() - b.dueAt!.getTime())
      .slice(0, params.limit)
      .map((s) => structuredClone(s));
    return { schedules, now };
  }

  scheduleRuns(params: ScheduleRunsParams): Run[] {
    return params.runIds.map((id) => this.deps.run(id)).filter((r): r is Run => r !== undefined && r.namespace === params.namespace)
      .map((r) => structuredClone(r));
  }
}

function keyOf(p: ScheduleKeyParams): string {
  return `${p.namespace}\u0000${p.id}`;
}

/** ScheduleOps as MemoryStore's methods (it extends this class), over its MemorySchedules. */
export abstract class MemoryScheduleOps implements ScheduleOps {
  protected abstract readonly schedules: MemorySchedules;
  async scheduleCreate(p: ScheduleCreateParams): Promise<ScheduleRecord> { return this.schedules.scheduleCreate(p); }
  async scheduleGet(p: ScheduleKeyParams): Promise<ScheduleRecord | null> { return this.schedules.scheduleGet(p); }
  async scheduleList(p: ScheduleListParams): Promise<ScheduleRecord[]> { return this.schedules.scheduleList(p); }
  async scheduleUpdate(p: ScheduleUpdateParams): Promise<ScheduleRecord | null> { return this.schedules.scheduleUpdate(p); }
  scheduleFire(p: ScheduleFireParams): Promise<ScheduleFireResult | null> { return this.schedules.scheduleFire(p); }
  async scheduleDelete(p: ScheduleKeyParams): Promise<boolean> { return this.schedules.scheduleDelete(p); }
  async scheduleListDue(p: ScheduleListDueParams): Promise<ScheduleListDueResult> { return this.schedules.scheduleListDue(p); }
  async scheduleRuns(p: ScheduleRunsParams): Promise<Run[]> { return this.schedules.scheduleRuns(p); }
}
