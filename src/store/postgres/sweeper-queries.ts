import type pg from 'pg';
import { RUN_COLUMNS } from './runs-queries.js';

/*
 * The sweeper's scans over `runs` and `journal` (sweeper duties 4 and the run timeouts) and the status count behind the
 * runs-by-status gauge: read-only statements, kept apart from runs-queries.ts because only the
 * sweeper and metrics run them. The partial indexes of migration 0003 keep both scans proportional
 * to unfinished runs, not to history.
 */

const UNFINISHED = `('PENDING', 'RUNNING', 'SUSPENDED')`;
const TERMINAL = `('SUCCEEDED', 'FAILED', 'CANCELLED')`;
const MS = `* interval '1 millisecond'`;
const CHILD_COLUMNS = RUN_COLUMNS.split(',').map((c) => `c.${c.trim()}`).join(', ');

/** Ended children whose unfinished parent has no winning resolution for their wait. */
export function runListEndedChildren(p: { limit: number; graceMs: number }): pg.QueryConfig {
  return {
    name: 'sweeper_ended_children',
    text: `SELECT ${CHILD_COLUMNS} FROM runs p
      JOIN runs c ON c.parent_run_id = p.id
      WHERE p.status IN ${UNFINISHED} AND c.status IN ${TERMINAL} AND c.parent_seq IS NOT NULL
        AND c.updated_at <= now() - $2::integer ${MS}
        AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.run_id = p.id AND j.ref_seq = c.parent_seq AND j.status = 'resolved')
      ORDER BY c.updated_at, c.id LIMIT $1`,
    values: [p.limit, p.graceMs],
  };
}

/** Unfinished children of parents that ended at least graceMs ago, with the parent's status and error. */
export function runListOrphans(p: { limit: number; graceMs: number }): pg.QueryConfig {
  return {
    name: 'sweeper_orphans',
    text: `SELECT ${CHILD_COLUMNS}, p.status AS parent_status, p.error AS parent_error FROM runs c
      JOIN runs p ON p.id = c.parent_run_id
      WHERE c.parent_run_id IS NOT NULL AND c.status IN ${UNFINISHED}
        AND p.status IN ${TERMINAL} AND p.updated_at <= now() - $2::integer ${MS}
      ORDER BY p.updated_at, c.id LIMIT $1`,
    values: [p.limit, p.graceMs],
  };
}

/**
 * Unfinished runs whose deadline passed (database clock), earliest first: the run-timeout duty.
 * The partial index runs_deadline (migration 0008) holds only unfinished runs with a deadline.
 */
export function runListTimedOut(p: { limit: number }): pg.QueryConfig {
  return {
    name: 'sweeper_timed_out',
    text: `SELECT ${RUN_COLUMNS} FROM runs
      WHERE deadline_at IS NOT NULL AND deadline_at <= now() AND status IN ${UNFINISHED}
      ORDER BY deadline_at, id LIMIT $1`,
    values: [p.limit],
  };
}

/** A full count by status: cheap at the sizes a gauge polls every few seconds; see docs/recovery.md. */
export function runCountByStatus(): pg.QueryConfig {
  return { name: 'sweeper_runs_by_status', text: `SELECT status, count(*)::int AS n FROM runs GROUP BY status` };
}
