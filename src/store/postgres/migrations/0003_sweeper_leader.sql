-- 0003_sweeper_leader: the sweeper's leader lease, and indexes for its parent/child scans.
-- Forward-only.

-- One row per store. A sweeper acts only while it holds this lease; `epoch` is the fencing token
-- every sweeper write compares under a FOR SHARE lock on this row (docs/recovery.md), so a paused
-- ex-leader's write either commits before a takeover or is refused after it.
CREATE TABLE sweeper_leader (
  name       text PRIMARY KEY,
  holder     text,
  expires_at timestamptz,
  epoch      bigint NOT NULL DEFAULT 0,
  CHECK ((holder IS NULL) = (expires_at IS NULL))
);
INSERT INTO sweeper_leader (name) VALUES ('sweeper');

-- Orphans: unfinished children, found by parent. Partial, so it holds only live children.
CREATE INDEX runs_unfinished_children ON runs (parent_run_id)
  WHERE parent_run_id IS NOT NULL AND status IN ('PENDING', 'RUNNING', 'SUSPENDED');
-- Ended children whose parent still waits: scanned from the unfinished (possible parent) side.
CREATE INDEX runs_unfinished ON runs (id) WHERE status IN ('PENDING', 'RUNNING', 'SUSPENDED');
