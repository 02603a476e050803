-- 0008_run_deadline: a run's timeout as a deadline on the run row (docs/workflows.md "Timeouts").
-- Forward-only.

-- Set once, at creation, on the database clock (created + the run timeout); NULL: no timeout.
-- The sweeper fails runs whose deadline passed, so it holds across any crash of any process.
ALTER TABLE runs ADD COLUMN deadline_at timestamptz;
-- runListTimedOut: unfinished runs by deadline. Partial, so it holds only runs that may still time out.
CREATE INDEX runs_deadline ON runs (deadline_at)
  WHERE deadline_at IS NOT NULL AND status IN ('PENDING', 'RUNNING', 'SUSPENDED');
