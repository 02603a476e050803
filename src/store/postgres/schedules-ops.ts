import type pg from 'pg';
import { IdempotencyConflictError, ScheduleExistsError } from '../../journal/errors.js';
import type { Run } from '../../journal/run.js';
import type { ScheduleRecord } from '../../journal/schedule.js';
import { isRunId, newRunId } from '../run-id.js';
import { recordStarts } from '../schedule-starts.js';
import type {
  RunCreateParams, RunCreateResult, ScheduleCreateParams, ScheduleFireParams, ScheduleFireResult, ScheduleKeyParams,
  ScheduleListDueParams, ScheduleListDueResult, ScheduleListParams, ScheduleOps, ScheduleRunsParams, ScheduleUpdateParams,
} from '../store.js';
import { assertRunCreateFits } from '../write-checks.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';
import * as sq from './schedules-queries.js';

/* PostgresStore's schedules (ScheduleOps in schedule-params.ts documents each). */

export async function scheduleCreate(db: PgAccess, params: ScheduleCreateParams): Promise<ScheduleRecord> {
  const row = (await db.query<sq.ScheduleRow>(sq.scheduleInsert(params))).rows[0];
  if (!row) throw new ScheduleExistsError(params.id);
  return sq.toSchedule(row);
}

export async function scheduleGet(db: PgAccess, params: ScheduleKeyParams): Promise<ScheduleRecord | null> {
  const row = (await db.query<sq.ScheduleRow>(sq.scheduleSelect(params))).rows[0];
  return row ? sq.toSchedule(row) : null;
}

export async function scheduleList(db: PgAccess, params: ScheduleListParams): Promise<ScheduleRecord[]> {
  const { rows } = await db.query<sq.ScheduleRow>(sq.scheduleList({ namespace: params.namespace, after: params.after ?? null, limit: params.pageSize }));
  return rows.map(sq.toSchedule);
}

export async function scheduleUpdate(db: PgAccess, params: ScheduleUpdateParams): Promise<ScheduleRecord | null> {
  if (!params.leader) {
    const row = (await db.query<sq.ScheduleRow>(sq.scheduleUpdate(params))).rows[0];
    return row ? sq.toSchedule(row) : null;
  }
  const leader = params.leader;
  return db.transaction(async (client) => {
    await db.sweeperFence(client, leader);
    const row = (await client.query<sq.ScheduleRow>(sq.scheduleUpdate(params))).rows[0];
    return row ? sq.toSchedule(row) : null;
  });
}

/**
 * One transaction: the leader fence (when given), the schedule row locked at the expected revision,
 * each run inserted (or the first run of its key found), the state recording them, the update.
 */
export async function scheduleFire(db: PgAccess, params: ScheduleFireParams): Promise<ScheduleFireResult | null> {
  for (const start of params.starts) assertRunCreateFits(start.run, db.limits);
  return db.transaction(async (client) => {
    if (params.leader) await db.sweeperFence(client, params.leader);
    const current = (await client.query<sq.ScheduleRow>(sq.scheduleSelect(params, true))).rows[0];
    if (!current || Number(current.revision) !== params.revision) return null;
    const runs: RunCreateResult[] = [];
    for (const start of params.starts) runs.push(await runCreateIn(client, start.run));
    const now = (await client.query<{ now: Date }>({ name: 'schedules_now', text: 'SELECT clock_timestamp() AS now' })).rows[0]!.now;
    const state = recordStarts(params.changes.state ?? current.state, params.starts, runs, now);
    const row = (await client.query<sq.ScheduleRow>(sq.scheduleUpdate({ ...params, changes: { ...params.changes, state } }))).rows[0];
    if (!row) throw new Error(`schedule ${params.id} changed while it fired, under its row lock`);
    return { schedule: sq.toSchedule(row), runs };
  });
}

/** runCreate inside the fire's transaction (runs-ops.ts runCreate does the same on its own). */
async function runCreateIn(client: pg.PoolClient, params: RunCreateParams): Promise<RunCreateResult> {
  const row = (await client.query<rq.RunRow>(rq.runInsert({ ...params, id: newRunId() }))).rows[0];
  if (row) return { run: rq.toRun(row), created: true, lease: null };
  const existing = (await client.query<rq.RunRow>(rq.runByIdempotencyKey(params.namespace, params.idempotencyKey!))).rows[0];
  if (!existing) throw new Error(`run for idempotency key "${params.idempotencyKey}" vanished during scheduleFire`);
  const run = rq.toRun(existing);
  if (run.workflowName !== params.workflowName) throw new IdempotencyConflictError(params.idempotencyKey!, run.id);
  return { run, created: false, lease: null };
}

export async function scheduleDelete(db: PgAccess, params: ScheduleKeyParams): Promise<boolean> {
  return ((await db.query(sq.scheduleDelete(params))).rowCount ?? 0) > 0;
}

export async function scheduleListDue(db: PgAccess, params: ScheduleListDueParams): Promise<ScheduleListDueResult> {
  const { rows } = await db.query<sq.ScheduleRow & { now: Date }>(sq.scheduleListDue(params));
  const now = rows[0]?.now ?? (await db.query<{ now: Date }>({ name: 'schedules_now', text: 'SELECT clock_timestamp() AS now' })).rows[0]!.now;
  return { schedules: rows.map(sq.toSchedule), now };
}

export async function scheduleRuns(db: PgAccess, params: ScheduleRunsParams): Promise<Run[]> {
  const ids = params.runIds.filter(isRunId);
  if (ids.length === 0) return [];
  return (await db.query<rq.RunRow>(sq.runsByIds(params.namespace, ids))).rows.map(rq.toRun);
}

/** ScheduleOps as PostgresStore's methods (it extends this class), each over the store's PgAccess. */
export abstract class PostgresScheduleOps implements ScheduleOps {
  protected abstract readonly db: PgAccess;
  scheduleCreate(p: ScheduleCreateParams): Promise<ScheduleRecord> { return scheduleCreate(this.db, p); }
  scheduleGet(p: ScheduleKeyParams): Promise<ScheduleRecord | null> { return scheduleGet(this.db, p); }
  scheduleList(p: ScheduleListParams): Promise<ScheduleRecord[]> { return scheduleList(this.db, p); }
  scheduleUpdate(p: ScheduleUpdateParams): Promise<ScheduleRecord | null> { return scheduleUpdate(this.db, p); }
  scheduleFire(p: ScheduleFireParams): Promise<ScheduleFireResult | null> { return scheduleFire(this.db, p); }
  scheduleDelete(p: ScheduleKeyParams): Promise<boolean> { return scheduleDelete(this.db, p); }
  scheduleListDue(p: ScheduleListDueParams): Promise<ScheduleListDueResult> { return scheduleListDue(this.db, p); }
  scheduleRuns(p: ScheduleRunsParams): Promise<Run[]> { return scheduleRuns(this.db, p); }
}
