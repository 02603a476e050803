import { IdempotencyConflictError, LeaseLostError, RunNotFoundError } from '../../journal/errors.js';
import { isTerminalStatus, type Lease, type Run, type RunStatus } from '../../journal/run.js';
import { assertPageSize, decodeRunCursor, encodeRunCursor } from '../run-cursor.js';
import { isRunId, newRunId } from '../run-id.js';
import type {
  RunClaimParams, RunCountByStatusResult, RunCreateParams, RunCreateResult, RunGetParams, RunLeaseAcquireParams,
  RunLeaseAcquireRunningResult, RunLeaseReleaseParams, RunLeaseRenewParams, RunListParams, RunListResult,
  RunDigestSetParams, RunForksParams, RunStatusForceParams, RunStatusForceResult, RunStatusSetParams, RunStatusSetResult,
} from '../run-params.js';
import { assertForcedStatusFits, assertRunCreateFits, assertStatusFits, driftEntry, prefixDeadlines } from '../write-checks.js';
import { outOfLinePayloads } from '../payload-refs.js';
import * as jq from './journal-queries.js';
import * as pq from './payloads-queries.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';
import * as sq from './sweeper-queries.js';

/* PostgresStore's runs and leases (RunOps in run-params.ts documents each). */

export async function runCreate(db: PgAccess, params: RunCreateParams): Promise<RunCreateResult> {
  const sizes = assertRunCreateFits(params, db.limits);
  if (params.parentRunId && !isRunId(params.parentRunId)) throw new RunNotFoundError(params.parentRunId);
  const ctx = { parentRunId: params.parentRunId };
  const insert = rq.runInsert({ ...params, id: newRunId() });
  const journal = params.journal ?? [];
  // A run created with its first entries (a fork's prefix, docs/forks.md): both commit or neither,
  // so no executor ever sees the run without them.
  const row = journal.length === 0 ? (await db.query<rq.RunRow & rq.LeaseRow>(insert, ctx)).rows[0] : await db.transaction(async (client) => {
    const created = (await client.query<rq.RunRow & rq.LeaseRow>(insert)).rows[0];
    if (!created) return undefined;
    const append = { runId: created.id, epoch: Number(created.lease_epoch), entries: journal, deadlines: prefixDeadlines(journal), maxEntries: db.limits.journalEntries,
      bytes: sizes.reduce((a, b) => a + b, 0), maxBytes: db.limits.journalBytes };
    const payloads = outOfLinePayloads(journal, sizes, db.limits);
    const written = await client.query<jq.AppendedRow>(payloads ? pq.journalAppendPayloads({ ...append, payloads }) : jq.journalAppend(append));
    if (written.rows.length !== journal.length) throw new Error(`runCreate wrote ${written.rows.length} of ${journal.length} entries of the new run`);
    return (await client.query<rq.RunRow & rq.LeaseRow>(rq.runGet(created.id, null))).rows[0];
  }, ctx);
  if (row) return { run: rq.toRun(row), created: true, lease: params.leaseFor ? rq.toLease(row) : null };
  // ON CONFLICT waited for any in-flight insert of this key, so the first run is committed now.
  const existing = (await db.query<rq.RunRow>(rq.runByIdempotencyKey(params.namespace, params.idempotencyKey!))).rows[0];
  if (!existing) throw new Error(`run for idempotency key "${params.idempotencyKey}" vanished during runCreate`);
  const run = rq.toRun(existing);
  if (run.workflowName !== params.workflowName) throw new IdempotencyConflictError(params.idempotencyKey!, run.id);
  return { run, created: false, lease: null };
}

export async function runGet(db: PgAccess, params: RunGetParams): Promise<Run> {
  return db.findRun(params.runId, params.namespace);
}

export async function runList(db: PgAccess, params: RunListParams): Promise<RunListResult> {
  assertPageSize(params.pageSize);
  const after = params.cursor ? decodeRunCursor(params.cursor) : null;
  if (params.parentRunId !== undefined && !isRunId(params.parentRunId)) return { runs: [], nextCursor: null };
  const labels = params.labels && Object.keys(params.labels).length ? JSON.stringify(params.labels) : null;
  const { rows } = await db.query<rq.RunRow>(rq.runList({
    namespace: params.namespace, statuses: params.statuses?.length ? params.statuses : null,
    workflowName: params.workflowName ?? null, labels, parentRunId: params.parentRunId ?? null,
    after, limit: params.pageSize + 1,
  }));
  const runs = rows.slice(0, params.pageSize).map(rq.toRun);
  const last = runs[runs.length - 1];
  return { runs, nextCursor: rows.length > params.pageSize && last ? encodeRunCursor(last) : null };
}

export async function runLeaseAcquire(db: PgAccess, params: RunLeaseAcquireParams): Promise<Lease | null> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<rq.LeaseRow>(rq.runLeaseAcquire({
    runId: params.runId, holder: params.holder, ttlMs: params.ttlMs,
    statuses: params.statuses ?? ['PENDING', 'RUNNING'], namespace: params.namespace ?? null,
  }));
  if (rows[0]) return rq.toLease(rows[0]);
  await db.findRun(params.runId, params.namespace ?? null); // throws RunNotFoundError
  return null;
}

export async function runLeaseAcquireRunning(db: PgAccess, params: RunLeaseAcquireParams): Promise<RunLeaseAcquireRunningResult | null> {
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const { rows } = await db.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runLeaseAcquireRunning({
    runId: params.runId, holder: params.holder, ttlMs: params.ttlMs,
    statuses: params.statuses ?? ['PENDING', 'RUNNING'], namespace: params.namespace ?? null, routing: params.routing,
  }), { runId: params.runId });
  if (rows[0]) return rq.takenOf(rows[0]);
  await db.findRun(params.runId, params.namespace ?? null); // throws RunNotFoundError
  return null;
}

export async function runLeaseRenew(db: PgAccess, params: RunLeaseRenewParams): Promise<Lease> {
  if (!isRunId(params.lease.runId)) throw new RunNotFoundError(params.lease.runId);
  const { rows } = await db.query<rq.LeaseRow>(rq.runLeaseRenew(params.lease, params.ttlMs), {}, db.leasePool);
  if (rows[0]) return rq.toLease(rows[0]);
  throw await db.fenceFailure(params.lease, 0, db.leasePool) ?? new LeaseLostError(params.lease.runId, params.lease.epoch);
}

export async function runLeaseRelease(db: PgAccess, params: RunLeaseReleaseParams): Promise<void> {
  if (!isRunId(params.lease.runId)) return;
  await db.query(rq.runLeaseRelease(params.lease), {}, db.leasePool);
}

export async function runClaim(db: PgAccess, params: RunClaimParams): Promise<Lease[]> {
  if (params.limit <= 0) return [];
  const serves = params.serves ? rq.servesJson(params.serves) : null;
  const { rows } = await db.query<rq.LeaseRow & { created_at: Date }>(rq.runClaim({
    holder: params.holder, ttlMs: params.ttlMs, limit: params.limit, namespace: params.namespace ?? null, serves, flows: params.flows ?? false,
  }));
  // UPDATE ... RETURNING has no order; hand runs out oldest first as the memory store does.
  rows.sort((a, b) => a.created_at.getTime() - b.created_at.getTime() || (a.id < b.id ? -1 : 1));
  return rows.map(rq.toLease);
}

export async function runStatusSet(db: PgAccess, params: RunStatusSetParams): Promise<RunStatusSetResult> {
  assertStatusFits(params, db.limits);
  if (!isRunId(params.lease.runId)) throw new RunNotFoundError(params.lease.runId);
  const terminal = isTerminalStatus(params.status);
  const { rows } = await db.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runStatusSet({
    lease: params.lease, status: params.status,
    output: terminal ? jq.jsonParam(params.output) : null, error: terminal ? jq.jsonParam(params.error) : null,
  }), { runId: params.lease.runId });
  if (rows[0]) return { run: rq.toRun(rows[0].run), entry: jq.toEntry(rows[0].entry) };
  throw await db.fenceFailure(params.lease) ?? new LeaseLostError(params.lease.runId, params.lease.epoch);
}

export async function runDigestSet(db: PgAccess, params: RunDigestSetParams): Promise<RunStatusSetResult> {
  if (!isRunId(params.lease.runId)) throw new RunNotFoundError(params.lease.runId);
  const entry = driftEntry(params.drift);
  const { rows } = await db.query<{ run: rq.RunRow; entry: jq.JournalRow }>(rq.runDigestSet({
    lease: params.lease, to: params.drift.to, entry: jq.jsonParam(entry.payload)!,
  }), { runId: params.lease.runId });
  if (rows[0]) return { run: rq.toRun(rows[0].run), entry: jq.toEntry(rows[0].entry) };
  throw await db.fenceFailure(params.lease) ?? new LeaseLostError(params.lease.runId, params.lease.epoch);
}

export async function runStatusForce(db: PgAccess, params: RunStatusForceParams): Promise<RunStatusForceResult | null> {
  assertForcedStatusFits(params, db.limits);
  if (!isRunId(params.runId)) throw new RunNotFoundError(params.runId);
  const terminal = isTerminalStatus(params.status);
  const statement = rq.runStatusForce({
    runId: params.runId, namespace: params.namespace ?? null, status: params.status,
    output: terminal ? jq.jsonParam(params.output) : null, error: terminal ? jq.jsonParam(params.error) : null,
  });
  const { leader } = params;
  const { rows } = leader
    ? await db.transaction(async (client) => {
      await db.sweeperFence(client, leader);
      return client.query<{ run: rq.RunRow; entry: jq.JournalRow }>(statement);
    })
    : await db.query<{ run: rq.RunRow; entry: jq.JournalRow }>(statement);
  if (rows[0]) return { run: rq.toRun(rows[0].run), entry: jq.toEntry(rows[0].entry) };
  await db.findRun(params.runId, params.namespace ?? null); // not found, or terminal already
  return null;
}

export async function runCountByStatus(db: PgAccess): Promise<RunCountByStatusResult> {
  const counts: Record<RunStatus, number> = { PENDING: 0, RUNNING: 0, SUSPENDED: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0 };
  const { rows } = await db.query<{ status: RunStatus; n: number }>(sq.runCountByStatus());
  for (const row of rows) counts[row.status] = row.n;
  return counts;
}

export async function runForks(db: PgAccess, params: RunForksParams): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(rq.runForks(params));
  return rows.map((r) => r.id);
}
