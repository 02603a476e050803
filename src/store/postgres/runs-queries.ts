import type pg from 'pg';
import type { Json, Lease, Run, RunError, RunStatus } from '../../journal/run.js';
import type { RunCreateParams, RunRouting } from '../store.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { statusEntryInsert, toEntry, type JournalRow } from './journal-queries.js';
import { RUN_IS_FLOW } from './flows-queries.js';
import { DEAD_LEASE_SESSIONS, STALE_LEASE_SESSIONS_DELETE } from './lease-sessions.js';
import { LIVE_REPLICA_SERVES_DIGEST } from './replicas-queries.js';
import { approvalPendingOutboxInsert, runFinishedOutboxInsert } from './webhooks-queries.js';

/*
 * Named statements on `runs` (STYLE habit 8). Lease expiry is compared with now() in WHERE clauses
 * (stable, so the partial indexes apply; statements here are short autocommit transactions) and
 * set from clock_timestamp() (the database clock, never the worker's; reliability.md §2.8).
 */

export const RUN_COLUMNS = `id, namespace, workflow_name, workflow_version, workflow_digest, status, input, output, error,
  labels, idempotency_key, parent_run_id, parent_seq, budget_usd, dry_run, lease_holder, lease_expires_at,
  lease_epoch, next_seq, journal_bytes, recovery_count, deadline_at, created_at, updated_at`;

const TERMINAL = `('SUCCEEDED', 'FAILED', 'CANCELLED')`;
const MS = `* interval '1 millisecond'`;

/** A runs row as pg returns it, or as to_jsonb renders it (dates as strings, bigints as numbers). */
export interface RunRow {
  id: string; namespace: string; workflow_name: string; workflow_version: string; workflow_digest: string;
  status: string; input: Json; output: Json | null; error: RunError | null; labels: Record<string, string>;
  idempotency_key: string | null; parent_run_id: string | null; parent_seq: number | null;
  budget_usd: string | number | null; dry_run: boolean; lease_holder: string | null;
  lease_expires_at: Date | string | null; lease_epoch: string | number; next_seq: number; journal_bytes?: string | number; recovery_count: number;
  deadline_at: Date | string | null; created_at: Date | string; updated_at: Date | string;
}

export function toRun(row: RunRow): Run {
  return {
    id: row.id, namespace: row.namespace, workflowName: row.workflow_name, workflowVersion: row.workflow_version,
    workflowDigest: row.workflow_digest, status: row.status as RunStatus, input: row.input,
    output: row.output ?? null, error: row.error ?? null, labels: row.labels, idempotencyKey: row.idempotency_key,
    parentRunId: row.parent_run_id, parentSeq: row.parent_seq,
    budgetUsd: row.budget_usd === null ? null : Number(row.budget_usd), dryRun: row.dry_run,
    leaseHolder: row.lease_holder, leaseExpiresAt: row.lease_expires_at === null ? null : new Date(row.lease_expires_at),
    leaseEpoch: Number(row.lease_epoch), nextSeq: row.next_seq, journalBytes: Number(row.journal_bytes ?? 0), recoveryCount: row.recovery_count,
    deadlineAt: row.deadline_at === null || row.deadline_at === undefined ? null : new Date(row.deadline_at),
    createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at),
  };
}

export interface LeaseRow { id: string; lease_holder: string; lease_epoch: string | number; lease_expires_at: Date }
const LEASE_COLUMNS = 'id, lease_holder, lease_epoch, lease_expires_at';

export function toLease(row: LeaseRow): Lease {
  return { runId: row.id, holder: row.lease_holder, epoch: Number(row.lease_epoch), expiresAt: new Date(row.lease_expires_at) };
}

/**
 * Inserts a run unless (namespace, idempotency_key) exists; then no row comes back. With $15
 * (leaseFor.recordRunning) its RUNNING status entry goes in at seq 0 in the same statement.
 */
export function runInsert(p: RunCreateParams & { id: string }): pg.QueryConfig {
  return {
    name: 'runs_insert',
    text: `WITH inserted AS (
        INSERT INTO runs (id, namespace, workflow_name, workflow_version, workflow_digest, status, input, labels,
          idempotency_key, parent_run_id, parent_seq, budget_usd, dry_run, lease_holder, lease_expires_at, lease_epoch, next_seq,
          deadline_at)
        VALUES ($1, $2, $3, $4, $5, CASE WHEN $14::text IS NULL THEN 'PENDING' ELSE 'RUNNING' END, $6::jsonb, $7::jsonb,
          $8, $9, $10, $11, $12, $14, CASE WHEN $14::text IS NULL THEN NULL ELSE clock_timestamp() + $13::integer ${MS} END,
          CASE WHEN $14::text IS NULL THEN 0 ELSE 1 END, CASE WHEN $15 THEN 1 ELSE 0 END,
          now() + $16::bigint ${MS})
        ON CONFLICT (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
        RETURNING ${RUN_COLUMNS}
      ), running AS (
        ${statusEntryInsert('(SELECT * FROM inserted WHERE $15)')}
      )
      SELECT * FROM inserted`,
    values: [p.id, p.namespace, p.workflowName, p.workflowVersion, p.workflowDigest, JSON.stringify(p.input),
      JSON.stringify(p.labels ?? {}), p.idempotencyKey ?? null, p.parentRunId ?? null, p.parentSeq ?? null,
      p.budgetUsd ?? null, p.dryRun ?? false, p.leaseFor?.ttlMs ?? null, p.leaseFor?.holder ?? null,
      p.leaseFor?.recordRunning === true, p.timeoutMs ?? null],
  };
}

export function runByIdempotencyKey(namespace: string, key: string): pg.QueryConfig {
  return {
    name: 'runs_by_idempotency_key',
    text: `SELECT ${RUN_COLUMNS} FROM runs WHERE namespace = $1 AND idempotency_key = $2`,
    values: [namespace, key],
  };
}

/** One run, fail-closed: a null namespace matches any (internal callers), a given one must match. */
export function runGet(runId: string, namespace: string | null): pg.QueryConfig {
  return {
    name: 'runs_get',
    text: `SELECT ${RUN_COLUMNS} FROM runs WHERE id = $1 AND ($2::text IS NULL OR namespace = $2)`,
    values: [runId, namespace],
  };
}

export function runList(p: {
  namespace: string; statuses: RunStatus[] | null; workflowName: string | null; labels: string | null;
  parentRunId: string | null; after: { createdAt: Date; id: string } | null; limit: number;
}): pg.QueryConfig {
  return {
    name: 'runs_list',
    text: `SELECT ${RUN_COLUMNS} FROM runs
      WHERE namespace = $1 AND ($2::text[] IS NULL OR status = ANY($2))
        AND ($3::text IS NULL OR workflow_name = $3) AND ($4::jsonb IS NULL OR labels @> $4)
        AND ($5::uuid IS NULL OR parent_run_id = $5)
        AND ($6::timestamptz IS NULL OR (created_at, id) < ($6, $7::uuid))
      ORDER BY created_at DESC, id DESC LIMIT $8`,
    values: [p.namespace, p.statuses, p.workflowName, p.labels, p.parentRunId, p.after?.createdAt ?? null,
      p.after?.id ?? null, p.limit],
  };
}

/** The forks of a run, newest first (0018's runs_fork_of index; its partial predicate is repeated). */
export function runForks(p: { runId: string; namespace: string; limit: number }): pg.QueryConfig {
  return { name: 'runs_forks', values: [p.runId, p.namespace, p.limit], text: `SELECT id FROM runs WHERE labels ? 'waymark.fork_of' AND labels ->> 'waymark.fork_of' = $1 AND namespace = $2 ORDER BY labels ->> 'waymark.fork_of', created_at DESC, id DESC LIMIT $3` };
}

/**
 * Takes the lease where it is free or expired: one statement, committed before the caller reads the
 * journal (DESIGN "Leases and fencing"). The epoch bump is what fences the previous holder.
 */
export function runLeaseAcquireRunning(p: {
  runId: string; holder: string; ttlMs: number; statuses: RunStatus[]; namespace: string | null; routing?: RunRouting | undefined;
}): pg.QueryConfig {
  // runLeaseAcquire's take and runStatusSet's RUNNING change in one statement: the status entry
  // goes in at the seq the UPDATE reserved (RUNNING clears output and error, as runStatusSet does).
  return {
    name: 'runs_lease_acquire_running',
    text: `WITH changed AS (
        UPDATE runs r SET lease_epoch = lease_epoch + 1, lease_holder = $2,
          lease_expires_at = clock_timestamp() + $3::integer ${MS}, status = 'RUNNING', resume_requested = false,
          output = NULL, error = NULL, next_seq = next_seq + 1, updated_at = now()
        WHERE id = $1 AND status = ANY($4::text[]) AND ($5::text IS NULL OR namespace = $5)
          AND (lease_holder IS NULL OR lease_expires_at < clock_timestamp()) AND ${routedTo('$6', '$7')}
        RETURNING ${RUN_COLUMNS}
      ), entry AS (
        ${statusEntryInsert('changed')} RETURNING *
      )
      SELECT to_jsonb(changed) AS run, to_jsonb(entry) AS entry FROM changed, entry`,
    values: [p.runId, p.holder, p.ttlMs, p.statuses, p.namespace, p.routing ? servesJson(p.routing.serves) : null, p.routing?.flows ?? false],
  };
}

/** A runLeaseAcquireRunning row as the store returns it. */
export function takenOf(row: { run: RunRow; entry: JournalRow }): { lease: Lease; run: Run; entry: JournalEntry } {
  const run = toRun(row.run);
  return { lease: { runId: run.id, holder: run.leaseHolder!, epoch: run.leaseEpoch, expiresAt: run.leaseExpiresAt! }, run, entry: toEntry(row.entry) };
}

export function runLeaseAcquire(p: {
  runId: string; holder: string; ttlMs: number; statuses: RunStatus[]; namespace: string | null;
}): pg.QueryConfig {
  return {
    name: 'runs_lease_acquire',
    text: `UPDATE runs SET lease_epoch = lease_epoch + 1, lease_holder = $2,
        lease_expires_at = clock_timestamp() + $3::integer ${MS}, status = 'RUNNING', resume_requested = false,
        output = CASE WHEN status IN ${TERMINAL} THEN NULL ELSE output END,
        error = CASE WHEN status IN ${TERMINAL} THEN NULL ELSE error END, updated_at = now()
      WHERE id = $1 AND status = ANY($4::text[]) AND ($5::text IS NULL OR namespace = $5)
        AND (lease_holder IS NULL OR lease_expires_at < clock_timestamp())
      RETURNING ${LEASE_COLUMNS}`,
    values: [p.runId, p.holder, p.ttlMs, p.statuses, p.namespace],
  };
}

/** Renews by epoch alone: an expired lease nobody took over is still ours (the epoch is the fence). */
export function runLeaseRenew(lease: Lease, ttlMs: number): pg.QueryConfig {
  return {
    name: 'runs_lease_renew',
    text: `UPDATE runs SET lease_expires_at = clock_timestamp() + $3::integer ${MS}
      WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL
      RETURNING ${LEASE_COLUMNS}`,
    values: [lease.runId, lease.epoch, ttlMs],
  };
}

export function runLeaseRelease(lease: Lease): pg.QueryConfig {
  return {
    name: 'runs_lease_release',
    text: `UPDATE runs SET lease_holder = NULL, lease_expires_at = NULL, resume_requested = false, updated_at = now(),
        status = CASE WHEN status = 'RUNNING' THEN 'PENDING' ELSE status END
      WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL`,
    values: [lease.runId, lease.epoch],
  };
}

/** A holder's `serves` as the routing statements' jsonb parameter, built once per list (an executor and its takes pass the same one every time). */
const servesParams = new WeakMap<object, string>();
export function servesJson(serves: RunRouting['serves']): string {
  let json = servesParams.get(serves);
  if (json === undefined) {
    json = JSON.stringify(serves.map((w) => ({ name: w.name, digest: w.digest })));
    servesParams.set(serves, json);
  }
  return json;
}

/**
 * Whether run `r` may be executed by a holder serving `serves` (JSON [{ name, digest }], NULL:
 * any run) and, when `flows`, the flows of the run's namespace: its exact digest, or its name while
 * no live replica serves its digest (the engine then applies the drift policy), or a flow. The one
 * routing rule of claims and takes (docs/recovery.md "Routing").
 */
function routedTo(serves: string, flows: string): string {
  return `(${serves}::jsonb IS NULL OR ${serves}::jsonb @> jsonb_build_array(jsonb_build_object('name', r.workflow_name, 'digest', r.workflow_digest))
            OR (${serves}::jsonb @> jsonb_build_array(jsonb_build_object('name', r.workflow_name)) AND NOT ${LIVE_REPLICA_SERVES_DIGEST})
            OR (${flows}::boolean AND ${RUN_IS_FLOW}))`;
}

/**
 * Claims PENDING runs oldest first. SKIP LOCKED in the subquery and the predicate repeated on the
 * target row: either alone measured 0 double claims, the bare subquery 1,250 of 2,000
 * (reliability.md §2.7); test/store/claiming.test.ts runs 4 claimers over 2,000 runs.
 */
export function runClaim(p: { holder: string; ttlMs: number; limit: number; namespace: string | null; serves: string | null; flows: boolean }): pg.QueryConfig {
  return {
    name: 'runs_claim',
    // $5 (routing, docs/recovery.md "Routing"): the definitions the claimer serves, as JSON
    // [{ name, digest }]; a run is claimed for its exact digest, or for its name when no live
    // replica serves its digest (the engine then applies the drift policy). NULL claims any run.
    // $6: also runs of a declarative flow of the run's namespace (every replica serves flows).
    text: `WITH candidates AS (
        SELECT id FROM runs r WHERE status = 'PENDING' AND ($4::text IS NULL OR namespace = $4) AND ${routedTo('$5', '$6')}
        ORDER BY created_at, id LIMIT $3 FOR UPDATE SKIP LOCKED
      )
      UPDATE runs r SET status = 'RUNNING', lease_epoch = r.lease_epoch + 1, lease_holder = $1,
        lease_expires_at = clock_timestamp() + $2::integer ${MS}, resume_requested = false, updated_at = now()
      FROM candidates c WHERE r.id = c.id AND r.status = 'PENDING'
      RETURNING r.id, r.lease_holder, r.lease_epoch, r.lease_expires_at, r.created_at`,
    values: [p.holder, p.ttlMs, p.limit, p.namespace, p.serves, p.flows],
  };
}

/**
 * Sweeper duty 1 in one statement: expired RUNNING runs past their grace period become PENDING
 * (recovery_count + 1) or, once they used maxRecoveries, FAILED with a `status` entry; the epoch
 * bump fences the old holder either way. Claimed with SKIP LOCKED plus the predicate repeated on
 * the target row (test/store/claiming.test.ts: 3 sweepers, 500 runs).
 */
export function runRecoverExpired(p: { limit: number; maxRecoveries: number; graceMs: number; failError: RunError; outageGraceMs?: number | undefined }): pg.QueryConfig {
  return {
    name: 'runs_recover_expired',
    text: `WITH candidates AS (
        SELECT id FROM runs
        WHERE status = 'RUNNING' AND lease_expires_at < now() AND created_at <= now() - $3::integer ${MS}
        ORDER BY lease_expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
      )${recoverTail(`r.lease_expires_at < now()`, '$4', OUTAGE_EXPIRY)}
      SELECT id, status FROM swept ORDER BY id`,
    values: [p.limit, p.maxRecoveries, p.graceMs, JSON.stringify(p.failError), p.outageGraceMs ?? null],
  };
}

/**
 * The dead-session reclaim (docs/recovery.md "Dead sessions"): RUNNING runs whose holder's
 * registered lease session has ended are recovered as runRecoverExpired recovers expired ones, at
 * once and without a grace period (the holder is provably gone). A dead registration is deleted
 * once a batch took all of its holder's runs, so a holder that lost only its lease session and goes
 * on claiming falls back to lease expiry until it registers again.
 */
export function runRecoverDeadSessions(p: { limit: number; maxRecoveries: number; failError: RunError }): pg.QueryConfig {
  return {
    name: 'runs_recover_dead_sessions',
    text: `WITH dead AS MATERIALIZED (
        ${DEAD_LEASE_SESSIONS}
      ), candidates AS (
        SELECT r.id FROM runs r JOIN dead d ON r.lease_holder = d.holder
        WHERE r.status = 'RUNNING' ORDER BY r.id LIMIT $1 FOR UPDATE OF r SKIP LOCKED
      )${recoverTail(`r.lease_holder IN (SELECT holder FROM dead)`, '$3', 'false')}, forgotten AS (
        DELETE FROM lease_sessions s USING dead d
        WHERE s.holder = d.holder AND s.lock_key = d.lock_key AND (SELECT count(*) FROM candidates) < $1
      ), stale AS (
        ${STALE_LEASE_SESSIONS_DELETE}
      )
      SELECT id, status FROM swept ORDER BY id`,
    values: [p.limit, p.maxRecoveries, JSON.stringify(p.failError)],
  };
}

/**
 * A lease that expired before the database had been up for `outageGraceMs` ($5; the sweeper passes
 * the lease TTL) could not have been renewed: its holder was cut off by a database restart, not
 * stuck on the run. Recovering it does not count towards maxRecoveries (docs/recovery.md
 * "Database outages"), so restarts of PostgreSQL never fail a run as Interrupted. NULL: every
 * recovery counts.
 */
const OUTAGE_EXPIRY = `($5::integer IS NOT NULL AND r.lease_expires_at < pg_postmaster_start_time() + $5::integer ${MS})`;

/**
 * What both recoveries do to their candidates ($2 maxRecoveries, `fail` the error, `excused` true
 * for a recovery that does not count): `swept` and its writes.
 */
function recoverTail(stillClaimable: string, fail: string, excused: string): string {
  const fails = `(r.recovery_count >= $2 AND NOT (${excused}))`;
  return `, swept AS (
        UPDATE runs r SET
          status = CASE WHEN ${fails} THEN 'FAILED' ELSE 'PENDING' END,
          error = CASE WHEN ${fails} THEN ${fail}::jsonb END, output = NULL,
          recovery_count = r.recovery_count + CASE WHEN ${fails} OR (${excused}) THEN 0 ELSE 1 END,
          next_seq = r.next_seq + CASE WHEN ${fails} THEN 1 ELSE 0 END,
          lease_epoch = r.lease_epoch + 1, lease_holder = NULL, lease_expires_at = NULL,
          resume_requested = false, updated_at = now()
        FROM candidates c WHERE r.id = c.id AND r.status = 'RUNNING' AND ${stillClaimable}
        RETURNING r.id, r.namespace, r.workflow_name, r.workflow_version, r.status, r.next_seq, r.output, r.error, r.lease_epoch
      ), failed_entries AS (
        ${statusEntryInsert(`(SELECT * FROM swept WHERE status = 'FAILED')`)}
      ), outbox AS (
        ${runFinishedOutboxInsert('swept')}
      ), retired AS (
        DELETE FROM suspension_deadlines d USING swept s WHERE d.run_id = s.id AND s.status = 'FAILED'
      )`;
}


/**
 * What both status changes do after updating the run row ($1 = run id, $3 = status): journal the
 * `status` entry, write the webhook outbox rows when it ended or parked on approvals (same
 * statement, same commit), retire the run's deadlines when it ended, and return the run and the entry.
 */
const STATUS_CHANGE_TAIL = `, entry AS (
        ${statusEntryInsert('changed')} RETURNING *
      ), outbox AS (
        ${runFinishedOutboxInsert('changed')}
      ), approvals_outbox AS (
        ${approvalPendingOutboxInsert('changed')}
      ), retired AS (
        DELETE FROM suspension_deadlines WHERE run_id = $1 AND $3 IN ${TERMINAL} AND EXISTS (SELECT 1 FROM changed)
      )
      SELECT to_jsonb(changed) AS run, to_jsonb(entry) AS entry FROM changed, entry`;

/**
 * The fenced status change: the UPDATE is the fence (epoch + lease held), the status entry goes
 * in at the seq it reserved, and a terminal status retires the run's deadlines. A SUSPENDED
 * request becomes PENDING when resume_requested was set (a resolution landed while RUNNING).
 */
export function runStatusSet(p: { lease: Lease; status: RunStatus; output: string | null; error: string | null }): pg.QueryConfig {
  return {
    name: 'runs_status_set',
    text: `WITH changed AS (
        UPDATE runs SET
          status = CASE WHEN $3::text = 'SUSPENDED' AND resume_requested THEN 'PENDING' ELSE $3::text END,
          output = $4::jsonb, error = $5::jsonb, next_seq = next_seq + 1, updated_at = now(),
          lease_holder = CASE WHEN $3 = 'RUNNING' THEN lease_holder END,
          lease_expires_at = CASE WHEN $3 = 'RUNNING' THEN lease_expires_at END,
          resume_requested = CASE WHEN $3 = 'RUNNING' THEN resume_requested ELSE false END
        WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL
        RETURNING ${RUN_COLUMNS}
      )${STATUS_CHANGE_TAIL}`,
    values: [p.lease.runId, p.lease.epoch, p.status, p.output, p.error],
  };
}

/** The fenced re-pin (runDigestSet): the run's digest and its `drift` entry at the seq the UPDATE reserved. */
export function runDigestSet(p: { lease: Lease; to: string; entry: string }): pg.QueryConfig {
  return {
    name: 'runs_digest_set',
    text: `WITH changed AS (
        UPDATE runs SET workflow_digest = $3, next_seq = next_seq + 1, updated_at = now()
        WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL
        RETURNING ${RUN_COLUMNS}
      ), entry AS (
        INSERT INTO journal (run_id, seq, scope, kind, name, content_key, occurrence, status, payload)
        SELECT c.id, c.next_seq - 1, '', 'status', 'drift', '', 0, 'info', $4::jsonb FROM changed c RETURNING *
      )
      SELECT to_jsonb(changed) AS run, to_jsonb(entry) AS entry FROM changed, entry`,
    values: [p.lease.runId, p.lease.epoch, p.to, p.entry],
  };
}

/**
 * The unfenced status change (operators, sweeper): bumps the epoch so any holder is fenced off,
 * releases the lease, journals the change. No row back when the run is terminal or not found.
 */
export function runStatusForce(p: {
  runId: string; namespace: string | null; status: RunStatus; output: string | null; error: string | null;
}): pg.QueryConfig {
  return {
    name: 'runs_status_force',
    text: `WITH changed AS (
        UPDATE runs SET status = $3::text, output = $4::jsonb, error = $5::jsonb, next_seq = next_seq + 1,
          lease_epoch = lease_epoch + 1, lease_holder = NULL, lease_expires_at = NULL,
          resume_requested = false, updated_at = now()
        WHERE id = $1 AND ($2::text IS NULL OR namespace = $2) AND status NOT IN ${TERMINAL}
        RETURNING ${RUN_COLUMNS}
      )${STATUS_CHANGE_TAIL}`,
    values: [p.runId, p.namespace, p.status, p.output, p.error],
  };
}

/** Locks the run row for journalResolve (the same lock every fenced write takes by updating it). */
export function runLockForResolve(runId: string, namespace: string | null): pg.QueryConfig {
  return {
    name: 'runs_lock_for_resolve',
    text: `SELECT status, next_seq FROM runs WHERE id = $1 AND ($2::text IS NULL OR namespace = $2) FOR NO KEY UPDATE`,
    values: [runId, namespace],
  };
}
