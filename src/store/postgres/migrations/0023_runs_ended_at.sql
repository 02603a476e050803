-- 0023_runs_ended_at: retention's index without blocking HOT updates of running runs
-- (docs/performance.md "Issue 28 ... in one sitting", the WAL note). Forward-only.
--
-- 0020 indexed runs (updated_at, id) for retention's scan of finished roots. Every journal append
-- sets runs.updated_at, and PostgreSQL makes an update HOT (no new index entries, far less WAL)
-- only when no indexed column changes, partial indexes included: from 0020 on, no update of a
-- running run was HOT, and a step wrote 1,128 WAL bytes instead of 750. ended_at is updated_at
-- while the run is finished and NULL before: an append to a running run leaves it NULL, so
-- indexing it keeps those updates HOT, and retention scans it as it scanned updated_at. Adding a
-- stored generated column rewrites the table once.
ALTER TABLE runs ADD COLUMN ended_at timestamptz
  GENERATED ALWAYS AS (CASE WHEN status IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN updated_at END) STORED;

DROP INDEX runs_finished_roots;
CREATE INDEX runs_finished_roots ON runs (ended_at, id) WHERE parent_run_id IS NULL AND ended_at IS NOT NULL;
