import type pg from 'pg';
import type { Json } from '../../journal/run.js';
import type { FlowRecord, FlowRegisterParams } from '../store.js';

/*
 * Named statements on `flows` (migration 0012): declarative flows, one row per version
 * (docs/flows.md). Times are the database clock's.
 */

const COLUMNS = 'namespace, name, version, digest, definition, created_at';

/**
 * Inserts the next version unless the latest one has the same digest (then no row). Two
 * concurrent registrations may compute the same version: the primary key refuses the second,
 * and the store tries again (postgres-store.ts flowRegister).
 */
export function flowInsertNext(p: FlowRegisterParams): pg.QueryConfig {
  return {
    name: 'flows_insert_next',
    text: `WITH latest AS (
        SELECT version, digest FROM flows WHERE namespace = $1 AND name = $2 ORDER BY version DESC LIMIT 1
      )
      INSERT INTO flows (namespace, name, version, digest, definition, created_at)
      SELECT $1, $2, COALESCE((SELECT version FROM latest), 0) + 1, $3, $4::jsonb, clock_timestamp()
      WHERE NOT EXISTS (SELECT 1 FROM latest WHERE digest = $3)
      RETURNING ${COLUMNS}`,
    values: [p.namespace, p.name, p.digest, JSON.stringify(p.definition)],
  };
}

export function flowSelect(p: { namespace: string; name: string; version: number | null }): pg.QueryConfig {
  // $3 NULL: the latest version.
  return {
    name: 'flows_select',
    text: `SELECT ${COLUMNS} FROM flows WHERE namespace = $1 AND name = $2 AND ($3::integer IS NULL OR version = $3)
      ORDER BY version DESC LIMIT 1`,
    values: [p.namespace, p.name, p.version],
  };
}

export function flowListLatest(namespace: string): pg.QueryConfig {
  return {
    name: 'flows_list_latest',
    text: `SELECT DISTINCT ON (name) ${COLUMNS} FROM flows WHERE namespace = $1 ORDER BY name, version DESC`,
    values: [namespace],
  };
}

/** Whether run `r`'s workflow is a flow of its namespace (a SQL condition over a `runs r` row). */
export const RUN_IS_FLOW = 'EXISTS (SELECT 1 FROM flows f WHERE f.namespace = r.namespace AND f.name = r.workflow_name)';

export interface FlowRow {
  namespace: string; name: string; version: number; digest: string; definition: Json; created_at: Date;
}

export function toFlow(row: FlowRow): FlowRecord {
  return {
    namespace: row.namespace, name: row.name, version: row.version, digest: row.digest, definition: row.definition, createdAt: row.created_at,
  };
}
