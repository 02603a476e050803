import type pg from 'pg';
import type { EntryKind, EntryStatus, JournalEntry, NewJournalEntry, Usage } from '../../journal/journal-entry.js';
import type { Json, RunError } from '../../journal/run.js';
import { AS_READ, Interner, type Strings } from './interner.js';

/*
 * Named statements on `journal` (STYLE habit 8). The fenced append is one statement: a data-modifying
 * CTE whose UPDATE of the run row is the fence and whose INSERT uses the seqs that UPDATE returned.
 * One statement is one transaction, with no client round trip between fence and insert, so a paused
 * worker can never sit on the row lock mid-append (test/store/fencing.test.ts drives it step by step).
 */

export const JOURNAL_COLUMNS = `run_id, seq, scope, kind, name, content_key, occurrence, status, payload, error,
  ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt, created_at`;

/** A journal row as pg returns it, or as to_jsonb renders it (dates as strings, numerics as numbers). */
export interface JournalRow {
  run_id: string;
  seq: number;
  scope: string;
  kind: string;
  name: string;
  content_key: string;
  occurrence: number;
  status: string;
  payload: Json | null;
  error: RunError | null;
  ref_seq: number | null;
  idempotency_key: string | null;
  dedupe_key: string | null;
  usage: Usage | null;
  cost_usd: string | number | null;
  attempt: number | null;
  created_at: Date | string;
  /** Set when the payload is stored out of line (payloads table, migration 0022). */
  payload_sha256?: string | null;
  payload_bytes?: number | null;
}

/** One row as an entry, its strings and Date as node-postgres built them. */
export function toEntry(row: JournalRow): JournalEntry {
  return entryOf(row, row.run_id, AS_READ);
}

/**
 * A page of one run's rows as entries: one run id string for the page (as PostgreSQL spells a
 * uuid: lowercase; `journal_list` does not select it), and one string and Date per distinct
 * repeated value (interner.ts). A resume holds up to 100,000 entries (docs/performance.md, issue 31).
 */
export function pageEntries(rows: readonly JournalRow[], runId: string): JournalEntry[] {
  const strings = new Interner();
  const id = runId.toLowerCase();
  return rows.map((row) => entryOf(row, id, strings));
}

function entryOf(row: JournalRow, runId: string, strings: Strings): JournalEntry {
  return {
    runId,
    seq: row.seq,
    scope: strings.of(row.scope),
    kind: strings.of(row.kind) as EntryKind,
    name: strings.of(row.name),
    contentKey: strings.of(row.content_key),
    occurrence: row.occurrence,
    status: strings.of(row.status) as EntryStatus,
    payload: row.payload ?? null,
    error: row.error ?? null,
    refSeq: row.ref_seq,
    idempotencyKey: row.idempotency_key,
    dedupeKey: row.dedupe_key,
    usage: row.usage ?? null,
    costUsd: row.cost_usd === null ? null : Number(row.cost_usd),
    attempt: row.attempt ?? null,
    // pg has built a Date already (to_jsonb rows carry a string): one Date per entry, not two.
    createdAt: row.created_at instanceof Date ? strings.date(row.created_at) : new Date(row.created_at),
    // Only a reference read leaves an out-of-line payload out (journalList with refs).
    ...(row.payload === null && row.payload_sha256 ? { payloadRef: { sha256: row.payload_sha256, sizeBytes: row.payload_bytes ?? 0 } } : {}),
  };
}

/**
 * The entries as one JSON array for jsonb_to_recordset: one parameter however large the batch.
 * Every element has the same keys (`rid` null for a single run's append, where it is not read):
 * a conditional spread here cost ten times the rest of the encoding.
 */
function entriesJson(entries: readonly NewJournalEntry[], deadlines: readonly (Date | null)[], runId?: string): string {
  return JSON.stringify(entryRecords(entries, deadlines, runId));
}

/** entriesJson's elements, before encoding (payloads-queries.ts adds the out-of-line columns to them). */
export function entryRecords(entries: readonly NewJournalEntry[], deadlines: readonly (Date | null)[], runId?: string) {
  return entries.map((e, i) => ({
    rid: runId ?? null, i: i + 1, scope: e.scope, kind: e.kind, name: e.name, content_key: e.contentKey, occurrence: e.occurrence,
    status: e.status, payload: e.payload, error: e.error, ref_seq: e.refSeq, idempotency_key: e.idempotencyKey,
    dedupe_key: e.dedupeKey, usage: e.usage, cost_usd: e.costUsd, attempt: e.attempt, deadline_at: deadlines[i]?.toISOString() ?? null,
  }));
}

export const RECORD_COLUMNS: [string, string][] = [
  ['scope', 'text'], ['kind', 'text'], ['name', 'text'], ['content_key', 'text'], ['occurrence', 'integer'],
  ['status', 'text'], ['payload', 'jsonb'], ['error', 'jsonb'], ['ref_seq', 'integer'], ['idempotency_key', 'text'],
  ['dedupe_key', 'text'], ['usage', 'jsonb'], ['cost_usd', 'numeric'], ['attempt', 'integer'], ['deadline_at', 'timestamptz'],
];

/** The rows of an entriesJson parameter, numbered from 1 in array order (`ord`). */
export function recordset(param: string, columns: [string, string][] = RECORD_COLUMNS): string {
  const typed = columns.map(([c, t]) => `${c} ${t}`).join(', ');
  const names = columns.map(([c]) => c).join(', ');
  return `ROWS FROM (jsonb_to_recordset(${param}::jsonb) AS (${typed})) WITH ORDINALITY AS e(${names}, ord)`;
}

/** What an append returns per entry; the store fills in the rest from what it sent (appendedEntries). */
export interface AppendedRow {
  run_id: string;
  seq: number;
  created_at: Date;
}

export const INSERT_COLUMNS = `run_id, seq, scope, kind, name, content_key, occurrence, status, payload, error,
  ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt`;

/**
 * The fence: the run row's UPDATE, refused (no row) unless the epoch is ours and n ($3) more
 * entries of `bytes` more payload bytes fit (limits.journalEntries $4, limits.journalBytes `maxBytes`).
 */
export function fence(bytes: string, maxBytes: string): string {
  return `UPDATE runs SET next_seq = next_seq + $3, journal_bytes = journal_bytes + ${bytes}::bigint, recovery_count = 0, updated_at = now()
         WHERE id = $1 AND lease_epoch = $2 AND lease_holder IS NOT NULL AND next_seq + $3 <= $4 AND journal_bytes + ${bytes}::bigint <= ${maxBytes}::bigint`;
}

/** jsonb parameters travel as JSON text; absent values as SQL NULL. */
export function jsonParam(value: Json | RunError | Usage | Record<string, string> | null | undefined): string | null {
  return value === undefined || value === null ? null : JSON.stringify(value);
}

/**
 * The fenced append of one entry without a deadline, the hot path (one step, one entry): plain
 * parameters rather than a JSON recordset, and only seq and created_at back. Zero rows back means
 * the fence refused it (epoch moved on, lease released, journal full, or no such run);
 * journalFenceState tells which.
 */
export function journalAppendSingle(p: { runId: string; epoch: number; entry: NewJournalEntry; maxEntries: number; bytes: number; maxBytes: number }): pg.QueryConfig {
  const e = p.entry;
  return {
    name: 'journal_append_single',
    text: `WITH fence AS (${fence('$19', '$20')} RETURNING next_seq - 1 AS seq)
      INSERT INTO journal (${INSERT_COLUMNS})
      SELECT $1, fence.seq, $5::text, $6::text, $7::text, $8::text, $9::integer, $10::text, $11::jsonb, $12::jsonb,
             $13::integer, $14::text, $15::text, $16::jsonb, $17::numeric, $18::integer FROM fence
      RETURNING run_id, seq, created_at`,
    values: [
      p.runId, p.epoch, 1, p.maxEntries, e.scope, e.kind, e.name, e.contentKey, e.occurrence, e.status,
      jsonParam(e.payload), jsonParam(e.error), e.refSeq, e.idempotencyKey, e.dedupeKey, jsonParam(e.usage), e.costUsd, e.attempt,
      p.bytes, p.maxBytes,
    ],
  };
}

/**
 * The fenced append of any number of entries. Suspensions with a deadline also get their
 * suspension_deadlines row in the same statement. Zero rows back: refused, as journalAppendSingle.
 */
export function journalAppend(p: {
  runId: string; epoch: number; entries: readonly NewJournalEntry[]; deadlines: readonly (Date | null)[]; maxEntries: number; bytes: number; maxBytes: number;
}): pg.QueryConfig {
  return {
    name: 'journal_append',
    text: `WITH fence AS (${fence('$6', '$7')} RETURNING next_seq - $3 AS first_seq
      ), rows AS (
        SELECT fence.first_seq + e.ord::integer - 1 AS seq, e.* FROM fence, ${recordset('$5')}
      ), deadlines AS (
        INSERT INTO suspension_deadlines (run_id, seq, deadline_at)
        SELECT $1, seq, deadline_at FROM rows WHERE status = 'suspended' AND deadline_at IS NOT NULL
      )
      INSERT INTO journal (${INSERT_COLUMNS})
      SELECT $1, seq, scope, kind, name, content_key, occurrence, status, payload, error,
             ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt FROM rows
      RETURNING run_id, seq, created_at`,
    values: [p.runId, p.epoch, p.entries.length, p.maxEntries, entriesJson(p.entries, p.deadlines), p.bytes, p.maxBytes],
  };
}

/**
 * The fenced append for several runs in one statement, so one transaction (one WAL flush) commits
 * the appends of many executions (group commit, append-batcher.ts). Each run is fenced on its own
 * row: a run whose fence refuses gets no rows back and the others are written. Run ids are
 * distinct within a call; `i` numbers each run's entries from 1. The suspension_deadlines insert
 * is left out of the statement when no entry has a deadline (the usual batch: step results).
 */
export function journalAppendMany(p: {
  requests: readonly { runId: string; epoch: number; entries: readonly NewJournalEntry[]; deadlines: readonly (Date | null)[]; bytes: number }[];
  maxEntries: number;
  maxBytes: number;
}): pg.QueryConfig {
  const runs = JSON.stringify(p.requests.map((r) => ({ run_id: r.runId, epoch: r.epoch, n: r.entries.length, bytes: r.bytes })));
  const entries = `[${p.requests.map((r) => entriesJson(r.entries, r.deadlines, r.runId).slice(1, -1)).filter((s) => s.length > 0).join(',')}]`;
  const typed = RECORD_COLUMNS.map(([c, t]) => `${c} ${t}`).join(', ');
  const withDeadlines = p.requests.some((r) => r.deadlines.some((d) => d !== null));
  return {
    name: withDeadlines ? 'journal_append_many_deadlines' : 'journal_append_many',
    text: `WITH req AS (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(run_id uuid, epoch bigint, n integer, bytes bigint)
      ), fence AS (
        UPDATE runs SET next_seq = runs.next_seq + req.n, journal_bytes = runs.journal_bytes + req.bytes, recovery_count = 0, updated_at = now()
          FROM req
         WHERE runs.id = req.run_id AND runs.lease_epoch = req.epoch AND runs.lease_holder IS NOT NULL
           AND runs.next_seq + req.n <= $2 AND runs.journal_bytes + req.bytes <= $4::bigint
        RETURNING runs.id AS run_id, runs.next_seq - req.n AS first_seq
      ), rows AS (
        SELECT fence.run_id, fence.first_seq + e.i - 1 AS seq, e.*
          FROM jsonb_to_recordset($3::jsonb) AS e(rid uuid, i integer, ${typed})
          JOIN fence ON fence.run_id = e.rid
      )${withDeadlines ? `, deadlines AS (
        INSERT INTO suspension_deadlines (run_id, seq, deadline_at)
        SELECT run_id, seq, deadline_at FROM rows WHERE status = 'suspended' AND deadline_at IS NOT NULL
      )` : ''}
      INSERT INTO journal (${INSERT_COLUMNS})
      SELECT run_id, seq, scope, kind, name, content_key, occurrence, status, payload, error,
             ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt FROM rows
      RETURNING run_id, seq, created_at`,
    values: [runs, p.maxEntries, entries, p.maxBytes],
  };
}

/**
 * The entries of one run's append from what was sent and the (seq, created_at) rows that came
 * back: the i-th entry sent got the i-th seq. Null when the rows do not account for every entry
 * (the fence refused).
 */
export function appendedEntries(runId: string, entries: readonly NewJournalEntry[], rows: readonly AppendedRow[]): JournalEntry[] | null {
  if (rows.length !== entries.length || entries.length === 0) return null;
  const seqs = rows.map((r) => ({ seq: r.seq, createdAt: new Date(r.created_at) })).sort((a, b) => a.seq - b.seq);
  return entries.map((e, i) => ({
    runId, seq: seqs[i]!.seq, scope: e.scope, kind: e.kind, name: e.name, contentKey: e.contentKey, occurrence: e.occurrence,
    status: e.status, payload: e.payload, error: e.error, refSeq: e.refSeq, idempotencyKey: e.idempotencyKey,
    dedupeKey: e.dedupeKey, usage: e.usage, costUsd: e.costUsd, attempt: e.attempt, createdAt: seqs[i]!.createdAt,
  }));
}

/** Why a fenced statement matched no row: is there a run, is the epoch still ours, how full is it. */
export function journalFenceState(runId: string): pg.QueryConfig {
  return {
    name: 'journal_fence_state',
    text: 'SELECT lease_epoch, lease_holder IS NOT NULL AS held, next_seq, journal_bytes FROM runs WHERE id = $1',
    values: [runId],
  };
}

/**
 * Entries after a cursor. The EXISTS makes a namespace mismatch look exactly like an unknown run.
 * An out-of-line payload (migration 0022) is fetched in the same statement, by a subquery that runs
 * only for such entries, so a journal without one pays nothing; with `refs` it is left out and its
 * hash and size come back instead. Two statements, so the inline read (replay's) carries no column
 * it does not use.
 */
export function journalList(p: { runId: string; afterSeq: number; limit: number | null; namespace: string | null; refs?: boolean }): pg.QueryConfig {
  const where = `WHERE run_id = $1 AND seq > $2
        AND EXISTS (SELECT 1 FROM runs WHERE id = $1 AND ($4::text IS NULL OR namespace = $4))
      ORDER BY seq LIMIT $3`;
  const values = [p.runId, p.afterSeq, p.limit, p.namespace];
  if (p.refs) return { name: 'journal_list_refs', text: `SELECT ${JOURNAL_COLUMNS}, payload_sha256, payload_bytes FROM journal ${where}`, values };
  return {
    name: 'journal_list',
    text: `SELECT seq, scope, kind, name, content_key, occurrence, status,
        CASE WHEN j.payload_sha256 IS NULL THEN j.payload
          ELSE (SELECT b.body FROM payloads b WHERE b.run_id = j.run_id AND b.sha256 = j.payload_sha256) END AS payload,
        error, ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt, created_at
      FROM journal j ${where}`,
    values,
  };
}

/** Per run, the sum of its own entries' cost_usd (0 when none); runs outside `namespace` are left out. */
export function journalCostTotals(p: { runIds: string[]; namespace: string | null }): pg.QueryConfig {
  return {
    name: 'journal_cost_totals',
    text: `SELECT r.id::text AS id, COALESCE((SELECT SUM(j.cost_usd) FROM journal j WHERE j.run_id = r.id), 0)::text AS total
      FROM runs r WHERE r.id = ANY($1::uuid[]) AND ($2::text IS NULL OR r.namespace = $2)`,
    values: [p.runIds, p.namespace],
  };
}

/** A run's suspended entries (journal_open_waits) with the entries referring to each (journal_ref_seq). */
export function journalWaits(p: { runId: string; seq: number | null }): pg.QueryConfig {
  return {
    name: 'journal_waits',
    text: `SELECT to_jsonb(j) AS entry, COALESCE((SELECT jsonb_agg(to_jsonb(r) ORDER BY r.seq) FROM journal r
        WHERE r.run_id = j.run_id AND r.ref_seq = j.seq), '[]'::jsonb) AS referrers
      FROM journal j WHERE j.run_id = $1 AND j.status = 'suspended' AND ($2::integer IS NULL OR j.seq = $2)
      ORDER BY j.seq`,
    values: [p.runId, p.seq],
  };
}

/**
 * A run tree's spend and reservations (store.ts journalSpend) through the partial index
 * journal_priced (migration 0014), by run (LATERAL with OFFSET 0, so the index is searched per run of the tree,
 * never scanned across runs): only entries with a cost and model intents are visited. A
 * reservation is open while no entry refers to its intent (journal_ref_seq). No row: unknown run.
 */
export function journalSpend(p: { runId: string; namespace: string; maxDepth: number }): pg.QueryConfig {
  return {
    name: 'journal_spend',
    text: `WITH RECURSIVE tree AS (
        SELECT id, 0 AS depth FROM runs WHERE id = $1 AND namespace = $2
        UNION ALL
        SELECT c.id, t.depth + 1 FROM runs c JOIN tree t ON c.parent_run_id = t.id WHERE t.depth < $3 AND c.namespace = $2
      ), priced AS (
        SELECT j.run_id, j.cost_usd,
          CASE WHEN j.kind = 'model' AND j.status = 'running' AND jsonb_typeof(j.payload->'estimatedCostUsd') = 'number'
              AND (j.payload->>'estimatedCostUsd')::numeric > 0
              AND NOT EXISTS (SELECT 1 FROM journal t WHERE t.run_id = j.run_id AND t.ref_seq = j.seq)
            THEN (j.payload->>'estimatedCostUsd')::numeric END AS reserved
        FROM tree CROSS JOIN LATERAL (
          SELECT * FROM journal WHERE run_id = tree.id AND (cost_usd IS NOT NULL OR kind = 'model') OFFSET 0
        ) j
      )
      SELECT (SELECT count(*) FROM tree)::int AS runs,
        COALESCE(sum(cost_usd) FILTER (WHERE run_id = $1), 0)::text AS own,
        COALESCE(sum(cost_usd) FILTER (WHERE run_id <> $1), 0)::text AS children,
        count(cost_usd)::int AS priced, COALESCE(sum(reserved), 0)::text AS reserved
      FROM priced`,
    values: [p.runId, p.namespace, p.maxDepth],
  };
}

/**
 * What journalResolve decides on, read after the run row is locked (a separate statement, so READ
 * COMMITTED gives it a snapshot that includes every resolution committed before the lock was ours).
 */
export function journalResolveFacts(p: { runId: string; suspensionSeq: number; dedupeKey: string | null }): pg.QueryConfig {
  return {
    name: 'journal_resolve_facts',
    text: `SELECT
        (SELECT to_jsonb(d) FROM journal d WHERE d.run_id = $1 AND d.dedupe_key = $3) AS duplicate,
        (SELECT s.status FROM journal s WHERE s.run_id = $1 AND s.seq = $2) AS target_status,
        (SELECT to_jsonb(w) FROM journal w WHERE w.run_id = $1 AND w.ref_seq = $2 AND w.status = 'resolved') AS winner`,
    values: [p.runId, p.suspensionSeq, p.dedupeKey],
  };
}

/** The winning resolution of a suspension, if any. */
export function journalWinner(p: { runId: string; suspensionSeq: number }): pg.QueryConfig {
  return {
    name: 'journal_winner',
    text: `SELECT ${JOURNAL_COLUMNS} FROM journal WHERE run_id = $1 AND ref_seq = $2 AND status = 'resolved'`,
    values: [p.runId, p.suspensionSeq],
  };
}

/**
 * Appends a resolution under the run-row lock the caller holds. An applied one wakes a SUSPENDED
 * run (PENDING), flags a RUNNING one (resume_requested), and retires the suspension's deadline.
 */
export function journalResolveInsert(p: {
  runId: string; suspensionSeq: number; applied: boolean; entry: NewJournalEntry;
}): pg.QueryConfig {
  return {
    name: 'journal_resolve_insert',
    text: `WITH bump AS (
        UPDATE runs SET next_seq = next_seq + 1, updated_at = now(),
               status = CASE WHEN $3 AND status = 'SUSPENDED' THEN 'PENDING' ELSE status END,
               resume_requested = resume_requested OR ($3 AND status = 'RUNNING')
         WHERE id = $1
        RETURNING next_seq - 1 AS seq
      ), retired AS (
        DELETE FROM suspension_deadlines WHERE $3 AND run_id = $1 AND seq = $2
      ), rows AS (
        SELECT bump.seq, e.* FROM bump, ${recordset('$4')}
      )
      INSERT INTO journal (run_id, seq, scope, kind, name, content_key, occurrence, status, payload, error,
                           ref_seq, idempotency_key, dedupe_key, usage, cost_usd)
      SELECT $1, seq, scope, kind, name, content_key, occurrence,
             CASE WHEN $3 THEN 'resolved' ELSE 'noop' END, payload, error,
             $2, idempotency_key, dedupe_key, usage, cost_usd FROM rows
      RETURNING ${JOURNAL_COLUMNS}`,
    values: [p.runId, p.suspensionSeq, p.applied, entriesJson([p.entry], [null])],
  };
}

/**
 * The `status` entry a status change appends, selected from a CTE `src` holding the updated run
 * row (whose next_seq already counts it). Kept here so runs-queries writes journal rows one way.
 */
export function statusEntryInsert(src: string): string {
  return `INSERT INTO journal (run_id, seq, scope, kind, name, content_key, occurrence, status, payload)
    SELECT s.id, s.next_seq - 1, '', 'status', s.status, '', 0, 'info',
           jsonb_build_object('status', s.status)
           || CASE WHEN s.output IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('output', s.output) END
           || CASE WHEN s.error IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('error', s.error) END
      FROM ${src} s`;
}
