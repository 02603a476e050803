import type pg from 'pg';
import type { NewJournalEntry } from '../../journal/journal-entry.js';
import type { Json, RunStatus } from '../../journal/run.js';
import type { JournalRow } from './journal-queries.js';

/*
 * Named statements on `signal_inbox` and the suspension listing (STYLE habit 8). "Open" has one
 * definition here, shared by the inbox and the listing: a suspended entry that no `resolved` and no
 * `cancelled` (invalidation) entry points at.
 */

const TERMINAL = `('SUCCEEDED', 'FAILED', 'CANCELLED')`;
const RESOLVED_OR_CANCELLED = (alias: string) =>
  `EXISTS (SELECT 1 FROM journal x WHERE x.run_id = ${alias}.run_id AND x.ref_seq = ${alias}.seq AND x.status IN ('resolved', 'cancelled'))`;

/** A signal_inbox row as to_jsonb renders it. */
export interface InboxRow { run_id: string; name: string; signal_id: string; payload: Json; created_at: string | Date }

const INBOX_COLUMNS = 'run_id, name, signal_id, payload, created_at';

/**
 * What signalDeliver decides on, read after the run row is locked (a separate statement, so READ
 * COMMITTED sees everything committed before the lock was granted; journal-queries says why).
 */
export function signalDeliverFacts(p: { runId: string; dedupeKey: string; signalId: string; name: string }): pg.QueryConfig {
  return {
    name: 'signal_deliver_facts',
    text: `SELECT
        (SELECT to_jsonb(d) FROM journal d WHERE d.run_id = $1 AND d.dedupe_key = $2) AS duplicate,
        (SELECT to_jsonb(w) FROM journal d JOIN journal w ON w.run_id = d.run_id AND w.ref_seq = d.ref_seq AND w.status = 'resolved'
          WHERE d.run_id = $1 AND d.dedupe_key = $2) AS duplicate_winner,
        (SELECT to_jsonb(b) FROM signal_inbox b WHERE b.run_id = $1 AND b.signal_id = $3) AS buffered,
        (SELECT s.seq FROM journal s WHERE s.run_id = $1 AND s.kind = 'signal' AND s.name = $4 AND s.status = 'suspended'
          AND NOT ${RESOLVED_OR_CANCELLED('s')} ORDER BY s.seq LIMIT 1) AS open_seq,
        EXISTS (SELECT 1 FROM signal_inbox q WHERE q.run_id = $1 AND q.name = $4) AS queued`,
    values: [p.runId, p.dedupeKey, p.signalId, p.name],
  };
}

/**
 * suspensionOpenOldest: the run's row (none: unknown run, or outside the namespace) and its oldest
 * open suspension of a kind and name, in one round trip. `journal_open_waits` (migration 0005)
 * walks only that run's suspensions of that kind and name in seq order, and `journal_ref_seq`
 * answers each "still open?" probe, so the cost does not grow with the rest of the journal.
 */
export function suspensionOpenOldest(p: { runId: string; namespace: string | null; kind: string; name: string }): pg.QueryConfig {
  return {
    name: 'journal_suspension_open_oldest',
    text: `SELECT (SELECT to_jsonb(s) FROM journal s
          WHERE s.run_id = r.id AND s.status = 'suspended' AND s.kind = $3 AND s.name = $4 AND NOT ${RESOLVED_OR_CANCELLED('s')}
          ORDER BY s.seq LIMIT 1) AS entry
      FROM runs r WHERE r.id = $1 AND ($2::text IS NULL OR r.namespace = $2)`,
    values: [p.runId, p.namespace, p.kind, p.name],
  };
}

export function inboxInsert(p: { runId: string; name: string; signalId: string; payload: Json }): pg.QueryConfig {
  return {
    name: 'signal_inbox_insert',
    text: `INSERT INTO signal_inbox (run_id, name, signal_id, payload) VALUES ($1, $2, $3, $4::jsonb) RETURNING ${INBOX_COLUMNS}`,
    values: [p.runId, p.name, p.signalId, JSON.stringify(p.payload)],
  };
}

/** Buffered signals in arrival order; the EXISTS makes a namespace mismatch look like an unknown run. */
export function inboxList(p: { runId: string; namespace: string | null; name: string | null; limit: number | null }): pg.QueryConfig {
  return {
    name: 'signal_inbox_list',
    text: `SELECT ${INBOX_COLUMNS} FROM signal_inbox
      WHERE run_id = $1 AND ($3::text IS NULL OR name = $3)
        AND EXISTS (SELECT 1 FROM runs WHERE id = $1 AND ($2::text IS NULL OR namespace = $2))
      ORDER BY id LIMIT $4`,
    values: [p.runId, p.namespace, p.name, p.limit],
  };
}

/** The fence of signalInboxConsume: locks the run row only while the lease is ours. */
export function runLockFenced(p: { runId: string; epoch: number }): pg.QueryConfig {
  return {
    name: 'runs_lock_fenced',
    text: `SELECT next_seq FROM runs WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL FOR NO KEY UPDATE`,
    values: [p.runId, p.epoch],
  };
}

export function inboxConsumeFacts(p: { runId: string; signalId: string; suspensionSeq: number }): pg.QueryConfig {
  return {
    name: 'signal_inbox_consume_facts',
    text: `SELECT
        EXISTS (SELECT 1 FROM signal_inbox b WHERE b.run_id = $1 AND b.signal_id = $2) AS buffered,
        (SELECT s.status FROM journal s WHERE s.run_id = $1 AND s.seq = $3) AS target_status,
        (SELECT to_jsonb(w) FROM journal w WHERE w.run_id = $1 AND w.ref_seq = $3 AND w.status = 'resolved') AS winner`,
    values: [p.runId, p.signalId, p.suspensionSeq],
  };
}

/**
 * Moves a buffered signal into the journal under the holder's lock: the entry at the next seq
 * (`resolved` or `noop`), the inbox row gone, and an applied one retires its wait's deadline. The
 * run's status is untouched: its holder is executing it and reads the entry it wrote.
 */
export function inboxConsume(p: {
  runId: string; signalId: string; suspensionSeq: number; applied: boolean; entry: NewJournalEntry;
}): pg.QueryConfig {
  const e = p.entry;
  return {
    name: 'signal_inbox_consume',
    text: `WITH bump AS (
        UPDATE runs SET next_seq = next_seq + 1, updated_at = now() WHERE id = $1 RETURNING next_seq - 1 AS seq
      ), taken AS (
        DELETE FROM signal_inbox WHERE run_id = $1 AND signal_id = $2
      ), retired AS (
        DELETE FROM suspension_deadlines WHERE $4 AND run_id = $1 AND seq = $3
      )
      INSERT INTO journal (run_id, seq, scope, kind, name, content_key, occurrence, status, payload, ref_seq, idempotency_key, dedupe_key)
      SELECT $1, bump.seq, $5, $6, $7, $8, $9, CASE WHEN $4 THEN 'resolved' ELSE 'noop' END, $10::jsonb, $3, $11, $12 FROM bump
      RETURNING run_id, seq, scope, kind, name, content_key, occurrence, status, payload, error,
        ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt, created_at`,
    values: [p.runId, p.signalId, p.suspensionSeq, p.applied, e.scope, e.kind, e.name, e.contentKey, e.occurrence,
      e.payload === null ? null : JSON.stringify(e.payload), e.idempotencyKey, e.dedupeKey],
  };
}

/** One suspensionList row: the entry, its winner, whether it was superseded, and the run's facts. */
export interface SuspensionRow {
  entry: JournalRow;
  created_us: string;
  winner: JournalRow | null;
  superseded: boolean;
  run_id: string; namespace: string; workflow_name: string; run_status: RunStatus; labels: Record<string, string>;
}

/**
 * Suspensions oldest first. The keyset compares the exact timestamp rebuilt from microseconds, so
 * pages neither repeat nor skip entries that share a millisecond.
 */
export function suspensionList(p: {
  namespace: string; kinds: string[] | null; runId: string | null; workflowName: string | null; labels: string | null;
  open: boolean | null; after: { createdAtMicros: string; runId: string; seq: number } | null; limit: number;
}): pg.QueryConfig {
  return {
    name: 'journal_suspension_list',
    text: `SELECT to_jsonb(j) AS entry, (extract(epoch FROM j.created_at) * 1000000)::bigint::text AS created_us,
        (SELECT to_jsonb(w) FROM journal w WHERE w.run_id = j.run_id AND w.ref_seq = j.seq AND w.status = 'resolved') AS winner,
        EXISTS (SELECT 1 FROM journal c WHERE c.run_id = j.run_id AND c.ref_seq = j.seq AND c.status = 'cancelled') AS superseded,
        r.id AS run_id, r.namespace, r.workflow_name, r.status AS run_status, r.labels
      FROM journal j JOIN runs r ON r.id = j.run_id
      WHERE j.status = 'suspended' AND r.namespace = $1 AND ($2::text[] IS NULL OR j.kind = ANY($2))
        AND ($3::uuid IS NULL OR j.run_id = $3) AND ($4::text IS NULL OR r.workflow_name = $4)
        AND ($5::jsonb IS NULL OR r.labels @> $5)
        AND ($6::boolean IS NULL OR $6 = (NOT ${RESOLVED_OR_CANCELLED('j')} AND r.status NOT IN ${TERMINAL}))
        AND ($7::bigint IS NULL OR (j.created_at, j.run_id, j.seq) >
          (timestamptz 'epoch' + $7::bigint * interval '1 microsecond', $8::uuid, $9::integer))
      ORDER BY j.created_at, j.run_id, j.seq LIMIT $10`,
    values: [p.namespace, p.kinds, p.runId, p.workflowName, p.labels, p.open,
      p.after?.createdAtMicros ?? null, p.after?.runId ?? null, p.after?.seq ?? null, p.limit],
  };
}
