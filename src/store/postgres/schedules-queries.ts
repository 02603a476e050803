import type pg from 'pg';
import type { ScheduleAction, SchedulePolicies, ScheduleRecord, ScheduleSpec, ScheduleState } from '../../journal/schedule.js';
import type { ScheduleChanges, ScheduleCreateParams, ScheduleKeyParams } from '../store.js';
import { RUN_COLUMNS } from './runs-queries.js';

/* Named statements on `schedules` (migration 0017): schedules (docs/schedules.md). Times are the database clock's. */

const COLUMNS = 'namespace, id, spec, action, policies, paused, note, state, due_at, revision, created_at, updated_at';

/** Inserts unless the (namespace, id) exists; then no row comes back. */
export function scheduleInsert(p: ScheduleCreateParams): pg.QueryConfig {
  return {
    name: 'schedules_insert',
    text: `INSERT INTO schedules (namespace, id, spec, action, policies, paused, note, state, due_at, revision, created_at, updated_at)
      VALUES ($1, $2, $3::jsonb, $4::jsonb, $5::jsonb, $6, $7, $8::jsonb, $9, 1, clock_timestamp(), clock_timestamp())
      ON CONFLICT (namespace, id) DO NOTHING
      RETURNING ${COLUMNS}`,
    values: [p.namespace, p.id, JSON.stringify(p.spec), JSON.stringify(p.action), JSON.stringify(p.policies), p.paused, p.note,
      JSON.stringify(p.state), p.dueAt],
  };
}

export function scheduleSelect(p: ScheduleKeyParams, forUpdate = false): pg.QueryConfig {
  return {
    name: forUpdate ? 'schedules_select_for_update' : 'schedules_select',
    text: `SELECT ${COLUMNS} FROM schedules WHERE namespace = $1 AND id = $2${forUpdate ? ' FOR UPDATE' : ''}`,
    values: [p.namespace, p.id],
  };
}

export function scheduleList(p: { namespace: string; after: string | null; limit: number }): pg.QueryConfig {
  return {
    name: 'schedules_list',
    text: `SELECT ${COLUMNS} FROM schedules WHERE namespace = $1 AND ($2::text IS NULL OR id > $2) ORDER BY id LIMIT $3`,
    values: [p.namespace, p.after, p.limit],
  };
}

/**
 * Compare-and-set on `revision`: a null parameter keeps the column ($9 true: due_at is replaced,
 * null included). No row when the schedule is gone or its revision moved.
 */
export function scheduleUpdate(p: ScheduleKeyParams & { revision: number; changes: ScheduleChanges }): pg.QueryConfig {
  const c = p.changes;
  const json = (v: unknown) => (v === undefined ? null : JSON.stringify(v));
  return {
    name: 'schedules_update',
    text: `UPDATE schedules SET spec = COALESCE($4::jsonb, spec), action = COALESCE($5::jsonb, action),
        policies = COALESCE($6::jsonb, policies), paused = COALESCE($7, paused), note = COALESCE($8, note),
        state = COALESCE($10::jsonb, state), due_at = CASE WHEN $9 THEN $11::timestamptz ELSE due_at END,
        revision = revision + 1, updated_at = clock_timestamp()
      WHERE namespace = $1 AND id = $2 AND revision = $3
      RETURNING ${COLUMNS}`,
    values: [p.namespace, p.id, p.revision, json(c.spec), json(c.action), json(c.policies), c.paused ?? null, c.note ?? null,
      c.dueAt !== undefined, json(c.state), c.dueAt ?? null],
  };
}

export function scheduleDelete(p: ScheduleKeyParams): pg.QueryConfig {
  return { name: 'schedules_delete', text: 'DELETE FROM schedules WHERE namespace = $1 AND id = $2', values: [p.namespace, p.id] };
}

/** Due within the horizon (schedules_due index), earliest first, with the database clock. */
export function scheduleListDue(p: { horizonMs: number; limit: number }): pg.QueryConfig {
  return {
    name: 'schedules_list_due',
    text: `SELECT ${COLUMNS}, clock_timestamp() AS now FROM schedules
      WHERE NOT paused AND due_at IS NOT NULL AND due_at <= clock_timestamp() + $1::bigint * interval '1 millisecond'
      ORDER BY due_at LIMIT $2`,
    values: [p.horizonMs, p.limit],
  };
}

export interface ScheduleRow {
  namespace: string; id: string; spec: ScheduleSpec; action: ScheduleAction; policies: SchedulePolicies; paused: boolean;
  note: string; state: ScheduleState; due_at: Date | null; revision: string | number; created_at: Date; updated_at: Date;
}

export function toSchedule(row: ScheduleRow): ScheduleRecord {
  return {
    namespace: row.namespace, id: row.id, spec: row.spec, action: row.action, policies: row.policies, paused: row.paused,
    note: row.note, state: row.state, dueAt: row.due_at, revision: Number(row.revision), createdAt: row.created_at, updatedAt: row.updated_at,
  };
}

/** The runs of `runIds` in the namespace (a schedule's open runs, on `runs`). */
export function runsByIds(namespace: string, runIds: string[]): pg.QueryConfig {
  return { name: 'schedules_runs_by_ids', text: `SELECT ${RUN_COLUMNS} FROM runs WHERE namespace = $1 AND id = ANY($2::uuid[])`, values: [namespace, runIds] };
}
