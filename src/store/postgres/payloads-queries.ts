import type pg from 'pg';
import type { NewJournalEntry } from '../../journal/journal-entry.js';
import type { OutOfLinePayload } from '../payload-refs.js';
import { entryRecords, fence, INSERT_COLUMNS, RECORD_COLUMNS, recordset } from './journal-queries.js';

/*
 * Named statements on `payloads` (migration 0022, docs/journal.md "Large payloads"): the fenced
 * append whose entries keep some payloads out of line. Reads of them are journal_list's (journal-queries.ts).
 */

const PAYLOAD_RECORD_COLUMNS: [string, string][] = [...RECORD_COLUMNS, ['payload_sha256', 'text'], ['payload_bytes', 'integer']];

/**
 * journalAppend for entries some of whose payloads are stored out of line (payload-refs.ts): each
 * such entry is sent with a null payload and its hash and size, and each distinct payload once in
 * `$6`, inserted into `payloads` in the same statement (so with the same fence: nothing is written
 * when it refuses). A payload the run already stored is not written again. The body travels as raw
 * JSON inside the parameter, never as a JSON string, so it is not escaped a second time.
 */
export function journalAppendPayloads(p: {
  runId: string; epoch: number; entries: readonly NewJournalEntry[]; deadlines: readonly (Date | null)[]; maxEntries: number;
  payloads: readonly (OutOfLinePayload | null)[]; bytes: number; maxBytes: number;
}): pg.QueryConfig {
  const rows = JSON.stringify(entryRecords(p.entries, p.deadlines).map((record, i) => {
    const ref = p.payloads[i];
    return { ...record, payload: ref ? null : record.payload, payload_sha256: ref?.sha256 ?? null, payload_bytes: ref?.sizeBytes ?? null };
  }));
  const distinct = new Map<string, OutOfLinePayload>();
  for (const ref of p.payloads) if (ref && !distinct.has(ref.sha256)) distinct.set(ref.sha256, ref);
  const bodies = `[${[...distinct.values()].map((r) => `{"sha256":"${r.sha256}","size_bytes":${r.sizeBytes},"body":${r.text}}`).join(',')}]`;
  return {
    name: 'journal_append_payloads',
    text: `WITH fence AS (${fence('$7', '$8')} RETURNING next_seq - $3 AS first_seq
      ), rows AS (
        SELECT fence.first_seq + e.ord::integer - 1 AS seq, e.* FROM fence, ${recordset('$5', PAYLOAD_RECORD_COLUMNS)}
      ), deadlines AS (
        INSERT INTO suspension_deadlines (run_id, seq, deadline_at)
        SELECT $1, seq, deadline_at FROM rows WHERE status = 'suspended' AND deadline_at IS NOT NULL
      ), stored AS (
        INSERT INTO payloads (run_id, sha256, size_bytes, body)
        SELECT $1, b.sha256, b.size_bytes, b.body FROM fence, jsonb_to_recordset($6::jsonb) AS b(sha256 text, size_bytes integer, body jsonb)
        ON CONFLICT (run_id, sha256) DO NOTHING
      )
      INSERT INTO journal (${INSERT_COLUMNS}, payload_sha256, payload_bytes)
      SELECT $1, seq, scope, kind, name, content_key, occurrence, status, payload, error,
             ref_seq, idempotency_key, dedupe_key, usage, cost_usd, attempt, payload_sha256, payload_bytes FROM rows
      RETURNING run_id, seq, created_at`,
    values: [p.runId, p.epoch, p.entries.length, p.maxEntries, rows, bodies, p.bytes, p.maxBytes],
  };
}
