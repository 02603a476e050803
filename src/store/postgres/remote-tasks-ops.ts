import { JournalFullError, RunNotFoundError } from '../../journal/errors.js';
import { newEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type RunStatus } from '../../journal/run.js';
import { isRunId } from '../run-id.js';
import type {
  RemoteTask, RemoteTaskClaimParams, RemoteTaskNextAtParams, RemoteTaskCompleteParams, RemoteTaskCompleteResult, RemoteTaskCreateParams,
  RemoteTaskFence, RemoteTaskRetryParams, RemoteToolInfo, RemoteToolListParams, WorkerHeartbeatParams,
} from '../store.js';
import { notASuspension } from '../store-errors.js';
import { assertEntriesFit, assertJsonStorable } from '../write-checks.js';
import * as jq from './journal-queries.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';
import * as tq from './remote-tasks-queries.js';

/*
 * PostgresStore's remote tools, workers and tasks (RemoteTaskOps in remote-task-params.ts documents
 * the contracts; docs/workers.md the protocol). The fence of a heartbeat, retry or result is the task row, locked with the
 * holder's token in its predicate: a concurrent claim skips a locked row, so no redispatch can slip
 * between the check and the write. A result also takes the run-row lock, as journalResolve does.
 */

/** `<run id>:<seq>` -> its parts, or null for an id no task can have. */
export function parseTaskId(taskId: string): { runId: string; seq: number } | null {
  const at = taskId.lastIndexOf(':');
  if (at <= 0) return null;
  const runId = taskId.slice(0, at);
  const seq = Number(taskId.slice(at + 1));
  return isRunId(runId) && Number.isSafeInteger(seq) && seq >= 0 ? { runId, seq } : null;
}

export async function workerHeartbeat(db: PgAccess, params: WorkerHeartbeatParams): Promise<boolean> {
  if (!params.tools) {
    const { rowCount } = await db.query(tq.workerTouch(params));
    return (rowCount ?? 0) > 0;
  }
  const tools = params.tools;
  assertJsonStorable('tools', tools as never, db.limits.payloadBytes);
  await db.transaction(async (client) => {
    await client.query(tq.toolsDeclare({ namespace: params.namespace, tools }));
    await client.query(tq.workerUpsert({ namespace: params.namespace, workerId: params.workerId, tools: tools.map((t) => t.name), ttlMs: params.ttlMs }));
  });
  return true;
}

export async function remoteToolList(db: PgAccess, params: RemoteToolListParams): Promise<RemoteToolInfo[]> {
  const { rows } = await db.query<tq.ToolRow>(tq.toolList({ namespace: params.namespace, name: params.name ?? null }));
  return rows.map(tq.toToolInfo);
}

export async function remoteTaskCreate(db: PgAccess, params: RemoteTaskCreateParams): Promise<RemoteTask> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  assertJsonStorable('input', params.input, db.limits.payloadBytes);
  const { rows } = await db.query<tq.TaskRow>(tq.taskCreate(params));
  if (!rows[0]) throw new RunNotFoundError(params.runId);
  return tq.toTask(rows[0]);
}

export async function remoteTaskClaim(db: PgAccess, params: RemoteTaskClaimParams): Promise<RemoteTask[]> {
  if (params.limit <= 0 || params.tools.length === 0) return [];
  const { rows } = await db.query<tq.TaskRow>(tq.taskClaim(params));
  return rows.map(tq.toTask).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
}

export async function remoteTaskNextAt(db: PgAccess, params: RemoteTaskNextAtParams): Promise<number | null> {
  if (params.tools.length === 0) return null;
  const { rows } = await db.query<{ ms: string | null }>(tq.taskNextAt(params));
  return rows[0]?.ms == null ? null : Number(rows[0].ms);
}

export async function remoteTaskHeartbeat(db: PgAccess, params: RemoteTaskFence): Promise<RemoteTask | null> {
  const id = parseTaskId(params.taskId);
  if (!id) return null;
  return db.transaction(async (client) => {
    const held = (await client.query<tq.TaskRow & { open: boolean }>(tq.taskHeld({ ...id, namespace: params.namespace, workerId: params.workerId, attempt: params.attempt }))).rows[0];
    if (!held || !held.open) return null;
    return tq.toTask((await client.query<tq.TaskRow>(tq.taskExtend(id))).rows[0]!);
  });
}

export async function remoteTaskRetry(db: PgAccess, params: RemoteTaskRetryParams): Promise<boolean> {
  const id = parseTaskId(params.taskId);
  if (!id) return false;
  assertJsonStorable('error', params.error, db.limits.payloadBytes);
  return db.transaction(async (client) => {
    const held = (await client.query<tq.TaskRow & { open: boolean }>(tq.taskHeld({ ...id, namespace: params.namespace, workerId: params.workerId, attempt: params.attempt }))).rows[0];
    if (!held || !held.open) return false;
    await client.query(tq.taskRetry({ ...id, delayMs: params.delayMs, error: params.error }));
    return true;
  });
}

export async function remoteTaskComplete(db: PgAccess, params: RemoteTaskCompleteParams): Promise<RemoteTaskCompleteResult> {
  const id = parseTaskId(params.taskId);
  if (!id) return { outcome: 'fenced' };
  const { runId, seq } = id;
  return db.transaction(async (client): Promise<RemoteTaskCompleteResult> => {
    // The fence: the task row, locked, only while this worker's token is the current one.
    const held = (await client.query<tq.TaskRow>(tq.taskHeld({ runId, seq, namespace: params.namespace, workerId: params.workerId, attempt: params.attempt }))).rows[0];
    if (!held) return { outcome: 'fenced' };
    // The result carries its effect's idempotency key, as an in-process tool's terminal entry repeats its intent's.
    const resolution = newEntry({ kind: 'tool', name: held.tool, status: 'resolved', payload: params.payload, dedupeKey: params.dedupeKey, idempotencyKey: held.idempotency_key });
    assertEntriesFit([resolution], db.limits, 'entry');
    const locked = (await client.query<{ status: RunStatus; next_seq: number }>(rq.runLockForResolve(runId, null))).rows[0];
    if (!locked) return { outcome: 'fenced' };
    const facts = (await client.query<{ duplicate: jq.JournalRow | null; target_status: string | null; winner: jq.JournalRow | null; cancelled: boolean }>(
      tq.completeFacts({ runId, seq, dedupeKey: params.dedupeKey }))).rows[0]!;
    if (isTerminalStatus(locked.status) || facts.winner || facts.cancelled || facts.duplicate) {
      await client.query(tq.taskDone(id));
      return { outcome: 'closed' };
    }
    if (facts.target_status !== 'suspended') throw notASuspension(runId, seq);
    if (locked.next_seq + 1 > db.limits.journalEntries) throw new JournalFullError(runId, db.limits.journalEntries);
    const [row] = (await client.query<jq.JournalRow>(jq.journalResolveInsert({ runId, suspensionSeq: seq, applied: true, entry: resolution }))).rows;
    await client.query(tq.taskDone(id));
    const entry = jq.toEntry(row!);
    return { outcome: 'resolved', resolution: { entry, applied: true, duplicate: false, winner: entry } };
  }, { runId });
}

export async function remoteTaskList(db: PgAccess, runId: string): Promise<RemoteTask[]> {
  if (!isRunId(runId)) return [];
  const { rows } = await db.query<tq.TaskRow>(tq.taskList(runId));
  return rows.map(tq.toTask);
}

export async function workerRemove(db: PgAccess, params: { namespace: string; workerId: string }): Promise<void> {
  await db.query(tq.workerRemove(params));
}
