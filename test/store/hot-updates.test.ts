import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fence } from '../../src/store/postgres/journal-queries.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * Every journal append updates its run's row (the fence: next_seq, journal_bytes, recovery_count,
 * updated_at). PostgreSQL writes such an update as HOT (in place, no new index entries, about a
 * third less WAL per step) only when no index of the table names a column it changes, partial
 * indexes and their predicates included. Migration 0020's retention index on runs (updated_at, id)
 * made every append a non-HOT update (1,128 WAL bytes per step against 750, docs/performance.md);
 * 0023 indexes ended_at instead. This keeps it so on the migrated schema.
 */

let db: MigratedDatabase;
beforeAll(async () => {
  db = await createMigratedDatabase('waymark_hot');
});
afterAll(async () => {
  await db?.drop();
});

/** The columns an UPDATE's SET list assigns. */
function setColumns(sql: string): string[] {
  const set = /UPDATE\s+runs\s+SET\s+([\s\S]*?)\s+WHERE/i.exec(sql)?.[1] ?? '';
  return [...set.matchAll(/(?:^|,)\s*([a-z_]+)\s*=/g)].map((m) => m[1]!);
}

/** Index definitions of runs that name one of `columns` (as a key, an expression or in the predicate). */
function offending(indexdefs: string[], columns: string[]): string[] {
  return indexdefs.filter((def) => columns.some((c) => new RegExp(`\\b${c}\\b`).test(def)));
}

describe('journal appends stay HOT updates of runs', () => {
  it("no index of runs names a column the append's fence sets", async () => {
    const columns = setColumns(fence('$6', '$7'));
    expect(columns).toEqual(['next_seq', 'journal_bytes', 'recovery_count', 'updated_at']);
    const { rows } = await db.admin.query<{ indexdef: string }>(`SELECT indexdef FROM pg_indexes WHERE tablename = 'runs'`);
    expect(rows.length).toBeGreaterThan(1);
    expect(offending(rows.map((r) => r.indexdef), columns)).toEqual([]);
  });

  it('negative control: the check sees the index migration 0020 made', () => {
    const before = 'CREATE INDEX runs_finished_roots ON public.runs USING btree (updated_at, id) WHERE ((parent_run_id IS NULL) AND (status = ANY (ARRAY[\'SUCCEEDED\'::text])))';
    expect(offending([before], ['next_seq', 'updated_at'])).toEqual([before]);
    expect(offending(['CREATE INDEX runs_finished_roots ON public.runs USING btree (ended_at, id) WHERE (ended_at IS NOT NULL)'], ['updated_at'])).toEqual([]);
  });
});
