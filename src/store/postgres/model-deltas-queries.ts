import type pg from 'pg';
import type { ModelDelta, ModelDeltaAppendParams, ModelDeltaKind, ModelDeltaListParams } from '../store.js';

/* Named statements on `model_deltas` and `model_delta_counters` (migration 0019): token deltas (docs/agents.md "Token streams"). */

/**
 * One statement: the counter row of the run is advanced by the batch's size (its lock held until
 * commit, so offsets commit in order), and the batch is inserted at the offsets it reserved.
 */
export function modelDeltaInsert(p: ModelDeltaAppendParams): pg.QueryConfig {
  const n = p.deltas.length;
  return {
    name: 'model_deltas_insert',
    text: `WITH counter AS (
        INSERT INTO model_delta_counters AS c (run_id, next_offset) VALUES ($1, $2)
        ON CONFLICT (run_id) DO UPDATE SET next_offset = c.next_offset + $2
        RETURNING next_offset - $2 AS first
      )
      INSERT INTO model_deltas (run_id, delta_offset, entry_seq, attempt, idx, kind, text, tool_call_id, tool_name)
      SELECT $1, counter.first + d.ord - 1, $3, $4, d.idx, d.kind, d.text, d.tool_call_id, d.tool_name
      FROM counter, unnest($5::int[], $6::text[], $7::text[], $8::text[], $9::text[]) WITH ORDINALITY
        AS d(idx, kind, text, tool_call_id, tool_name, ord)`,
    values: [
      p.runId, n, p.entrySeq, p.attempt,
      p.deltas.map((d) => d.index), p.deltas.map((d) => d.kind), p.deltas.map((d) => d.text),
      p.deltas.map((d) => d.toolCallId), p.deltas.map((d) => d.toolName),
    ],
  };
}

export function modelDeltaSelect(p: ModelDeltaListParams): pg.QueryConfig {
  return {
    name: 'model_deltas_select',
    text: `SELECT run_id, delta_offset, entry_seq, attempt, idx, kind, text, tool_call_id, tool_name, created_at
      FROM model_deltas WHERE run_id = $1 AND delta_offset > $2 ORDER BY delta_offset LIMIT $3`,
    values: [p.runId, p.afterOffset, p.limit],
  };
}

/** Oldest first, a bounded batch per statement, so one sweep never holds many row locks. */
export function modelDeltaDeleteBefore(before: Date, limit: number): pg.QueryConfig {
  return {
    name: 'model_deltas_delete_before',
    text: `DELETE FROM model_deltas WHERE (run_id, delta_offset) IN (
        SELECT run_id, delta_offset FROM model_deltas WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
    values: [before, limit],
  };
}

export interface ModelDeltaRow {
  run_id: string; delta_offset: string; entry_seq: number; attempt: string; idx: number; kind: ModelDeltaKind;
  text: string; tool_call_id: string | null; tool_name: string | null; created_at: Date;
}

export function toModelDelta(row: ModelDeltaRow): ModelDelta {
  return {
    runId: row.run_id, offset: Number(row.delta_offset), entrySeq: row.entry_seq, attempt: Number(row.attempt), index: row.idx,
    kind: row.kind, text: row.text, toolCallId: row.tool_call_id, toolName: row.tool_name, createdAt: row.created_at,
  };
}
