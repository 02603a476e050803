import type pg from 'pg';
import { JOURNAL_COLUMNS } from './journal-queries.js';

/*
 * Named statements on `suspension_deadlines`: one row per open suspension with a deadline, written
 * with the suspension (journal-queries journalAppend) and deleted when it is resolved or its run ends.
 */

/**
 * The earliest deadline after now: of an open suspension (rows go when it is resolved or its run
 * ends) or of an unfinished run. Two index range scans (suspension_deadlines_due, runs_deadline).
 */
export function deadlineNext(): pg.QueryConfig {
  return {
    name: 'deadlines_next',
    text: `SELECT LEAST(
        (SELECT min(deadline_at) FROM suspension_deadlines WHERE deadline_at > clock_timestamp()),
        (SELECT min(deadline_at) FROM runs WHERE deadline_at > clock_timestamp() AND status IN ('PENDING', 'RUNNING', 'SUSPENDED'))
      ) AS at, clock_timestamp() AS now`,
  };
}

/** Open suspensions whose deadline passed (database clock), earliest first, in runs not yet terminal. */
export function suspensionListDue(p: { limit: number; kinds: string[] | null }): pg.QueryConfig {
  const columns = JOURNAL_COLUMNS.split(',').map((c) => `j.${c.trim()}`).join(', ');
  return {
    name: 'suspension_deadlines_due',
    text: `SELECT ${columns} FROM suspension_deadlines d
      JOIN journal j ON j.run_id = d.run_id AND j.seq = d.seq
      JOIN runs r ON r.id = d.run_id
      WHERE d.deadline_at <= now() AND r.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
        AND ($2::text[] IS NULL OR j.kind = ANY($2))
      ORDER BY d.deadline_at, d.run_id, d.seq LIMIT $1`,
    values: [p.limit, p.kinds],
  };
}
