-- 0018_run_forks: find the forks of a run (ForkRun, docs/forks.md) without scanning its namespace.
-- Forward-only.

-- A fork carries its source's id in the label waymark.fork_of; GetRun lists a run's forks
-- (runForks). Partial: only forks have the label, a small share of the runs.
CREATE INDEX runs_fork_of ON runs ((labels ->> 'waymark.fork_of'), created_at DESC, id DESC)
  WHERE labels ? 'waymark.fork_of';
