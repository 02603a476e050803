import type pg from 'pg';

/*
 * Named statements of retention (STYLE habit 8): the scan for run trees due, the cost roll-up, the
 * deletes of a batch and the roll-up listing. store/retention-params.ts says what a purge keeps;
 * retention-ops.ts runs a batch of them in one transaction.
 */

const TERMINAL = `('SUCCEEDED', 'FAILED', 'CANCELLED')`;
const UNFINISHED = `('PENDING', 'RUNNING', 'SUSPENDED')`;

/**
 * Root runs that ended at least `olderThanMs` ago (runs_finished_roots on ended_at, migration 0023:
 * updated_at while finished), with no unfinished child
 * and no pending webhook delivery, oldest end first. `lock`: FOR UPDATE SKIP LOCKED, so a run a
 * resume or another purge holds is skipped rather than waited for.
 */
export function purgeRoots(p: {
  olderThanMs: number; namespace: string | null; except: string[]; statuses: string[] | null; workflowName: string | null; limit: number; lock: boolean;
}): pg.QueryConfig {
  return {
    name: p.lock ? 'retention_roots_lock' : 'retention_roots',
    text: `SELECT r.id, r.ended_at AS updated_at FROM runs r
      WHERE r.parent_run_id IS NULL AND r.status IN ${TERMINAL}
        AND r.ended_at <= now() - $1::bigint * interval '1 millisecond'
        AND ($2::text IS NULL OR r.namespace = $2) AND NOT (r.namespace = ANY($3::text[]))
        AND ($5::text[] IS NULL OR r.status = ANY($5::text[])) AND ($6::text IS NULL OR r.workflow_name = $6)
        AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_id = r.id AND c.status IN ${UNFINISHED})
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.run_id = r.id::text AND d.state = 'pending')
      ORDER BY r.ended_at, r.id LIMIT $4${p.lock ? ' FOR UPDATE SKIP LOCKED' : ''}`,
    values: [p.olderThanMs, p.namespace, p.except, p.limit, p.statuses, p.workflowName],
  };
}

/**
 * Every run of the trees under `roots` (the roots included), with whether it may go: terminal and
 * without a pending delivery. A tree with any run that may not is kept whole (retention-ops.ts).
 */
export function purgeTrees(roots: string[]): pg.QueryConfig {
  return {
    name: 'retention_trees',
    text: `WITH RECURSIVE tree AS (
        SELECT id AS root, id FROM runs WHERE id = ANY($1::uuid[])
        UNION ALL
        SELECT t.root, c.id FROM runs c JOIN tree t ON c.parent_run_id = t.id
      )
      SELECT t.root::text AS root, t.id::text AS id,
        r.status IN ${TERMINAL} AND NOT EXISTS (
          SELECT 1 FROM webhook_deliveries d WHERE d.run_id = r.id::text AND d.state = 'pending') AS purgeable
      FROM tree t JOIN runs r ON r.id = t.id`,
    values: [roots],
  };
}

/** Locks the descendants of a batch (purgeRoots locked the roots), skipping any another transaction holds. */
export function purgeLockRuns(ids: string[]): pg.QueryConfig {
  return { name: 'retention_lock_runs', text: `SELECT id::text FROM runs WHERE id = ANY($1::uuid[]) FOR UPDATE SKIP LOCKED`, values: [ids] };
}

/**
 * Adds the runs of a batch to run_cost_daily: one per run on the day it ended, and its priced
 * entries (journal_priced) on the day each was written. Grouped first, as ON CONFLICT may touch a
 * row once per statement.
 */
export function purgeCostRollup(ids: string[]): pg.QueryConfig {
  return {
    name: 'retention_cost_rollup',
    text: `INSERT INTO run_cost_daily AS d (namespace, workflow_name, day, runs, model_calls, cost_usd, input_tokens, output_tokens)
      SELECT namespace, workflow_name, day, sum(runs), sum(model_calls), sum(cost_usd), sum(input_tokens), sum(output_tokens) FROM (
        SELECT r.namespace, r.workflow_name, (r.updated_at AT TIME ZONE 'UTC')::date AS day,
          1 AS runs, 0 AS model_calls, 0::numeric AS cost_usd, 0::bigint AS input_tokens, 0::bigint AS output_tokens
        FROM runs r WHERE r.id = ANY($1::uuid[])
        UNION ALL
        SELECT r.namespace, r.workflow_name, (j.created_at AT TIME ZONE 'UTC')::date,
          0, (j.kind = 'model' AND j.usage IS NOT NULL)::int, COALESCE(j.cost_usd, 0),
          COALESCE((j.usage->>'inputTokens')::bigint, 0), COALESCE((j.usage->>'outputTokens')::bigint, 0)
        FROM journal j JOIN runs r ON r.id = j.run_id
        WHERE j.run_id = ANY($1::uuid[]) AND (j.cost_usd IS NOT NULL OR j.kind = 'model')
      ) x GROUP BY namespace, workflow_name, day
      ON CONFLICT (namespace, workflow_name, day) DO UPDATE SET
        runs = d.runs + EXCLUDED.runs, model_calls = d.model_calls + EXCLUDED.model_calls, cost_usd = d.cost_usd + EXCLUDED.cost_usd,
        input_tokens = d.input_tokens + EXCLUDED.input_tokens, output_tokens = d.output_tokens + EXCLUDED.output_tokens`,
    values: [ids],
  };
}

/** Journal entries of the batch (reported, and the dry run's figure). */
export function purgeEntryCount(ids: string[]): pg.QueryConfig {
  return { name: 'retention_entry_count', text: `SELECT count(*)::int AS n FROM journal WHERE run_id = ANY($1::uuid[])`, values: [ids] };
}

/**
 * The rows keyed by run that have no foreign key to `runs` (the outbox, buffered signals, remote
 * tasks); journal and suspension_deadlines go with the runs row (ON DELETE CASCADE).
 */
export function purgeSideRows(ids: string[]): pg.QueryConfig[] {
  return [
    { name: 'retention_delete_deliveries', text: `DELETE FROM webhook_deliveries WHERE run_id = ANY($1::text[])`, values: [ids] },
    { name: 'retention_delete_inbox', text: `DELETE FROM signal_inbox WHERE run_id = ANY($1::uuid[])`, values: [ids] },
    { name: 'retention_delete_tasks', text: `DELETE FROM remote_tasks WHERE run_id = ANY($1::uuid[])`, values: [ids] },
  ];
}

/** The runs themselves, children and parents in one statement (the parent key is checked at its end). */
export function purgeRuns(ids: string[]): pg.QueryConfig {
  return { name: 'retention_delete_runs', text: `DELETE FROM runs WHERE id = ANY($1::uuid[])`, values: [ids] };
}

export interface RunCostDailyRow {
  namespace: string; workflow_name: string; day: string; runs: string; model_calls: string;
  cost_usd: string; input_tokens: string; output_tokens: string;
}

export function runCostDailyList(p: { namespace: string | null; workflowName: string | null; fromDay: string | null; toDay: string | null }): pg.QueryConfig {
  return {
    name: 'retention_cost_daily_list',
    text: `SELECT namespace, workflow_name, to_char(day, 'YYYY-MM-DD') AS day, runs::text, model_calls::text, cost_usd::text,
        input_tokens::text, output_tokens::text
      FROM run_cost_daily
      WHERE ($1::text IS NULL OR namespace = $1) AND ($2::text IS NULL OR workflow_name = $2)
        AND ($3::date IS NULL OR day >= $3::date) AND ($4::date IS NULL OR day <= $4::date)
      ORDER BY day, namespace, workflow_name`,
    values: [p.namespace, p.workflowName, p.fromDay, p.toDay],
  };
}
