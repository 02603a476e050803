import type pg from 'pg';
import { SweeperLeaseLostError } from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Run, RunError, RunStatus } from '../../journal/run.js';
import type {
  DeadlineNext,
  OrphanedRun, RunListEndedChildrenParams, RunListOrphansParams, RunListTimedOutParams, RunRecoverDeadSessionsParams,
  RunRecoverExpiredParams, RunRecoverExpiredResult, SuspensionListDueParams, SweeperLease, SweeperLeaseAcquireParams,
  SweeperLeaseReleaseParams, SweeperLeaseRenewParams,
} from '../sweeper-params.js';
import { deadlineNext as deadlineNextStatement, suspensionListDue as dueStatement } from './deadlines-queries.js';
import * as jq from './journal-queries.js';
import type { PgAccess } from './pg-access.js';
import * as rq from './runs-queries.js';
import * as slq from './sweeper-leader-queries.js';
import * as sq from './sweeper-queries.js';

/*
 * PostgresStore's sweeper side: recoveries, due deadlines, the parent/child and timeout scans, and
 * the leader lease (SweeperOps in sweeper-params.ts documents each). The lease sessions the dead-
 * session recovery reads are held by LeaseSessions (lease-sessions.ts).
 */

export async function runRecoverExpired(db: PgAccess, params: RunRecoverExpiredParams): Promise<RunRecoverExpiredResult> {
  return recoverRuns(db, params, rq.runRecoverExpired(params));
}

export async function runRecoverDeadSessions(db: PgAccess, params: RunRecoverDeadSessionsParams): Promise<RunRecoverExpiredResult> {
  return recoverRuns(db, params, rq.runRecoverDeadSessions(params));
}

/** A sweeper recovery statement (expired leases, dead sessions): fenced by the leader, under the sweeper's lock timeout. */
async function recoverRuns(
  db: PgAccess, params: { limit: number; leader?: RunRecoverExpiredParams['leader'] }, statement: pg.QueryConfig,
): Promise<RunRecoverExpiredResult> {
  if (params.limit <= 0) return { recovered: [], failed: [] };
  const rows = await db.transaction(async (client) => {
    await client.query(`SET LOCAL lock_timeout = ${Math.trunc(db.sweeperLockTimeoutMs)}`);
    if (params.leader) await db.sweeperFence(client, params.leader);
    return (await client.query<{ id: string; status: RunStatus }>(statement)).rows;
  });
  return {
    recovered: rows.filter((r) => r.status === 'PENDING').map((r) => r.id),
    failed: rows.filter((r) => r.status === 'FAILED').map((r) => r.id),
  };
}

export async function suspensionListDue(db: PgAccess, params: SuspensionListDueParams): Promise<JournalEntry[]> {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<jq.JournalRow>(dueStatement({ limit: params.limit, kinds: params.kinds?.length ? params.kinds : null }));
  return rows.map(jq.toEntry);
}

export async function deadlineNext(db: PgAccess): Promise<DeadlineNext> {
  const { rows } = await db.query<{ at: Date | null; now: Date }>(deadlineNextStatement());
  return { at: rows[0]!.at, now: rows[0]!.now };
}

export async function runListEndedChildren(db: PgAccess, params: RunListEndedChildrenParams): Promise<Run[]> {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<rq.RunRow>(sq.runListEndedChildren(params));
  return rows.map(rq.toRun);
}

export async function runListOrphans(db: PgAccess, params: RunListOrphansParams): Promise<OrphanedRun[]> {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<rq.RunRow & { parent_status: RunStatus; parent_error: RunError | null }>(sq.runListOrphans(params));
  return rows.map((row) => ({ run: rq.toRun(row), parentStatus: row.parent_status, parentError: row.parent_error ?? null }));
}

export async function runListTimedOut(db: PgAccess, params: RunListTimedOutParams): Promise<Run[]> {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<rq.RunRow>(sq.runListTimedOut(params));
  return rows.map(rq.toRun);
}

export async function sweeperLeaseAcquire(db: PgAccess, params: SweeperLeaseAcquireParams): Promise<SweeperLease | null> {
  const { rows } = await db.query<slq.SweeperLeaseRow>(slq.sweeperLeaseAcquire(params), {}, db.leasePool);
  return rows[0] ? toSweeperLease(rows[0]) : null;
}

export async function sweeperLeaseRenew(db: PgAccess, params: SweeperLeaseRenewParams): Promise<SweeperLease> {
  const { holder, epoch } = params.lease;
  const { rows } = await db.query<slq.SweeperLeaseRow>(slq.sweeperLeaseRenew({ holder, epoch, ttlMs: params.ttlMs }), {}, db.leasePool);
  if (!rows[0]) throw new SweeperLeaseLostError(holder, epoch);
  return toSweeperLease(rows[0]);
}

export async function sweeperLeaseRelease(db: PgAccess, params: SweeperLeaseReleaseParams): Promise<void> {
  await db.query(slq.sweeperLeaseRelease(params.lease), {}, db.leasePool);
}

function toSweeperLease(row: slq.SweeperLeaseRow): SweeperLease {
  return { holder: row.holder, epoch: Number(row.epoch), expiresAt: new Date(row.expires_at) };
}
