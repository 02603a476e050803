import type pg from 'pg';
import type { Json } from '../../journal/run.js';
import type { RemoteTask, RemoteTaskCreateParams, RemoteToolDeclaration, RemoteToolInfo } from '../store.js';

/*
 * Named statements on remote_tools, remote_workers and remote_tasks (migration 0013; docs/workers.md).
 * Times are the database clock's. A task's `attempt` is its fencing token.
 */

const MS = `* interval '1 millisecond'`;
const TASK_COLUMNS = `run_id, seq, namespace, tool, queue, input, idempotency_key, attempt, max_attempts, heartbeat_timeout_ms,
  state, holder, claim_expires_at, available_at, deadline_at, last_error, created_at`;

/** Whether the call of task `t` is still open: deadline ahead, run not ended, suspension not won nor cancelled. */
const CALL_OPEN = `t.deadline_at > clock_timestamp()
  AND EXISTS (SELECT 1 FROM runs r WHERE r.id = t.run_id AND r.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED'))
  AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.run_id = t.run_id AND j.ref_seq = t.seq AND j.status IN ('resolved', 'cancelled'))`;

export function workerUpsert(p: { namespace: string; workerId: string; tools: string[]; ttlMs: number }): pg.QueryConfig {
  return {
    name: 'remote_workers_upsert',
    text: `INSERT INTO remote_workers (namespace, id, tools, heartbeat_at, expires_at)
      VALUES ($1, $2, $3::jsonb, clock_timestamp(), clock_timestamp() + $4::integer ${MS})
      ON CONFLICT (namespace, id) DO UPDATE SET tools = EXCLUDED.tools, heartbeat_at = EXCLUDED.heartbeat_at,
        expires_at = EXCLUDED.expires_at`,
    values: [p.namespace, p.workerId, JSON.stringify(p.tools), p.ttlMs],
  };
}

export function workerTouch(p: { namespace: string; workerId: string; ttlMs: number }): pg.QueryConfig {
  return {
    name: 'remote_workers_touch',
    text: `UPDATE remote_workers SET heartbeat_at = clock_timestamp(), expires_at = clock_timestamp() + $3::integer ${MS}
      WHERE namespace = $1 AND id = $2`,
    values: [p.namespace, p.workerId, p.ttlMs],
  };
}

export function workerRemove(p: { namespace: string; workerId: string }): pg.QueryConfig {
  return { name: 'remote_workers_remove', text: 'DELETE FROM remote_workers WHERE namespace = $1 AND id = $2', values: [p.namespace, p.workerId] };
}

export function toolsDeclare(p: { namespace: string; tools: RemoteToolDeclaration[] }): pg.QueryConfig {
  return {
    name: 'remote_tools_declare',
    text: `INSERT INTO remote_tools (namespace, name, declaration, declared_at)
      SELECT $1, d->>'name', d, clock_timestamp() FROM jsonb_array_elements($2::jsonb) d
      ON CONFLICT (namespace, name) DO UPDATE SET declaration = EXCLUDED.declaration, declared_at = EXCLUDED.declared_at`,
    values: [p.namespace, JSON.stringify(p.tools)],
  };
}

export function toolList(p: { namespace: string; name: string | null }): pg.QueryConfig {
  return {
    name: 'remote_tools_list',
    text: `SELECT t.namespace, t.declaration, t.declared_at,
        COALESCE((SELECT jsonb_agg(w.id ORDER BY w.id) FROM remote_workers w
          WHERE w.namespace = t.namespace AND w.expires_at > clock_timestamp() AND w.tools ? t.name), '[]'::jsonb) AS workers
      FROM remote_tools t WHERE t.namespace = $1 AND ($2::text IS NULL OR t.name = $2) ORDER BY t.name`,
    values: [p.namespace, p.name],
  };
}

export interface ToolRow { namespace: string; declaration: Json; declared_at: Date; workers: Json }

export function toToolInfo(row: ToolRow): RemoteToolInfo {
  return {
    namespace: row.namespace, declaration: row.declaration as unknown as RemoteToolDeclaration,
    declaredAt: row.declared_at, workers: row.workers as string[],
  };
}

export function taskCreate(p: RemoteTaskCreateParams): pg.QueryConfig {
  return {
    name: 'remote_tasks_create',
    text: `WITH ins AS (
        INSERT INTO remote_tasks (run_id, seq, namespace, tool, queue, input, idempotency_key, max_attempts, heartbeat_timeout_ms,
                                  available_at, deadline_at, created_at)
        SELECT $1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, clock_timestamp(), $10, clock_timestamp()
         WHERE EXISTS (SELECT 1 FROM runs WHERE id = $1)
        ON CONFLICT (run_id, seq) DO NOTHING
        RETURNING ${TASK_COLUMNS}
      )
      SELECT * FROM ins UNION ALL SELECT ${TASK_COLUMNS} FROM remote_tasks WHERE run_id = $1 AND seq = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
    values: [p.runId, p.seq, p.namespace, p.tool, p.queue, JSON.stringify(p.input), p.idempotencyKey, p.maxAttempts, p.heartbeatTimeoutMs, p.deadlineAt],
  };
}

/** Claims up to $5 open tasks: pending and available, or claimed with a lapsed claim; each claim bumps the token. */
export function taskClaim(p: { namespace: string; workerId: string; tools: string[]; queue: string; limit: number }): pg.QueryConfig {
  return {
    name: 'remote_tasks_claim',
    text: `WITH picked AS (
        SELECT t.run_id, t.seq FROM remote_tasks t
         WHERE t.namespace = $1 AND t.tool = ANY($3::text[]) AND t.queue = $4 AND t.state <> 'done'
           AND ((t.state = 'pending' AND t.available_at <= clock_timestamp())
             OR (t.state = 'claimed' AND t.claim_expires_at <= clock_timestamp()))
           AND ${CALL_OPEN}
         ORDER BY t.created_at, t.run_id, t.seq
         LIMIT $5
         FOR UPDATE OF t SKIP LOCKED
      )
      UPDATE remote_tasks t SET attempt = t.attempt + 1, state = 'claimed', holder = $2,
             claim_expires_at = clock_timestamp() + t.heartbeat_timeout_ms ${MS}
        FROM picked WHERE t.run_id = picked.run_id AND t.seq = picked.seq
      RETURNING ${TASK_COLUMNS.split(',').map((c) => `t.${c.trim()}`).join(', ')}`,
    values: [p.namespace, p.workerId, p.tools, p.queue, p.limit],
  };
}

/** Milliseconds until the next task of these tools becomes claimable by time alone (a retry's backoff, a lapsing claim); NULL: none. */
export function taskNextAt(p: { namespace: string; tools: string[]; queue: string }): pg.QueryConfig {
  return {
    name: 'remote_tasks_next_at',
    text: `SELECT CEIL(EXTRACT(EPOCH FROM MIN(at) - clock_timestamp()) * 1000)::bigint AS ms FROM (
        SELECT CASE WHEN t.state = 'pending' THEN t.available_at ELSE t.claim_expires_at END AS at FROM remote_tasks t
         WHERE t.namespace = $1 AND t.tool = ANY($2::text[]) AND t.queue = $3 AND t.state <> 'done'
      ) s WHERE at > clock_timestamp()`,
    values: [p.namespace, p.tools, p.queue],
  };
}

/** The holder's task, locked (the fence of heartbeats, retries and results); no row: fenced. */
export function taskHeld(p: { runId: string; seq: number; namespace: string; workerId: string; attempt: number }): pg.QueryConfig {
  return {
    name: 'remote_tasks_held',
    text: `SELECT ${TASK_COLUMNS}, (${CALL_OPEN}) AS open FROM remote_tasks t
      WHERE t.run_id = $1 AND t.seq = $2 AND t.state = 'claimed' AND t.attempt = $4 AND t.holder = $3 AND t.namespace = $5 FOR UPDATE OF t`,
    values: [p.runId, p.seq, p.workerId, p.attempt, p.namespace],
  };
}

export function taskExtend(p: { runId: string; seq: number }): pg.QueryConfig {
  return {
    name: 'remote_tasks_extend',
    text: `UPDATE remote_tasks t SET claim_expires_at = clock_timestamp() + t.heartbeat_timeout_ms ${MS}
      WHERE run_id = $1 AND seq = $2 RETURNING ${TASK_COLUMNS}`,
    values: [p.runId, p.seq],
  };
}

export function taskDone(p: { runId: string; seq: number }): pg.QueryConfig {
  return {
    name: 'remote_tasks_done',
    text: `UPDATE remote_tasks SET state = 'done', holder = NULL, claim_expires_at = NULL WHERE run_id = $1 AND seq = $2`,
    values: [p.runId, p.seq],
  };
}

export function taskRetry(p: { runId: string; seq: number; delayMs: number; error: Json }): pg.QueryConfig {
  return {
    name: 'remote_tasks_retry',
    text: `UPDATE remote_tasks SET state = 'pending', holder = NULL, claim_expires_at = NULL,
        available_at = clock_timestamp() + $3::integer ${MS}, last_error = $4::jsonb
      WHERE run_id = $1 AND seq = $2`,
    values: [p.runId, p.seq, p.delayMs, JSON.stringify(p.error)],
  };
}

export function taskList(runId: string): pg.QueryConfig {
  return { name: 'remote_tasks_list', text: `SELECT ${TASK_COLUMNS} FROM remote_tasks WHERE run_id = $1 ORDER BY seq`, values: [runId] };
}

export interface TaskRow {
  run_id: string; seq: number; namespace: string; tool: string; queue: string; input: Json; idempotency_key: string;
  attempt: number; max_attempts: number; heartbeat_timeout_ms: number; state: RemoteTask['state']; holder: string | null;
  claim_expires_at: Date | null; available_at: Date; deadline_at: Date; last_error: Json | null; created_at: Date;
}

export function toTask(row: TaskRow): RemoteTask {
  return {
    id: `${row.run_id}:${row.seq}`, namespace: row.namespace, runId: row.run_id, seq: row.seq, tool: row.tool, queue: row.queue,
    input: row.input, idempotencyKey: row.idempotency_key, attempt: row.attempt, maxAttempts: row.max_attempts,
    heartbeatTimeoutMs: row.heartbeat_timeout_ms, state: row.state, holder: row.holder, claimExpiresAt: row.claim_expires_at,
    availableAt: row.available_at, deadlineAt: row.deadline_at, lastError: row.last_error, createdAt: row.created_at,
  };
}

/** What a result needs to know under the run-row lock: a repeated dedupe key, the target, a winner, an invalidation. */
export function completeFacts(p: { runId: string; seq: number; dedupeKey: string | null }): pg.QueryConfig {
  return {
    name: 'remote_tasks_complete_facts',
    text: `SELECT
        (SELECT to_jsonb(d) FROM journal d WHERE d.run_id = $1 AND d.dedupe_key = $3) AS duplicate,
        (SELECT s.status FROM journal s WHERE s.run_id = $1 AND s.seq = $2) AS target_status,
        (SELECT to_jsonb(w) FROM journal w WHERE w.run_id = $1 AND w.ref_seq = $2 AND w.status = 'resolved') AS winner,
        EXISTS (SELECT 1 FROM journal c WHERE c.run_id = $1 AND c.ref_seq = $2 AND c.status = 'cancelled') AS cancelled`,
    values: [p.runId, p.seq, p.dedupeKey],
  };
}
