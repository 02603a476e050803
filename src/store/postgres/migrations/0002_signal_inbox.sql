-- 0002_signal_inbox: signals that arrive before a run waits for them, and the index that lists
-- suspensions across runs (ListApprovals). Forward-only, like every migration.

-- A signal addressed to a run with no open wait of that name is kept here until the run's
-- ctx.signal(name) starts waiting; the wait then takes the earliest one (docs/journal.md "Signals").
-- `id` is the arrival order. No foreign key to runs: rows are only written under the run-row lock
-- (which proves the run exists), runs are never deleted yet, and a foreign key would make every
-- `TRUNCATE runs, journal, …` in a test harness fail. Delete a run's rows with it when retention arrives.
CREATE TABLE signal_inbox (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id     uuid NOT NULL,
  name       text NOT NULL,
  signal_id  text NOT NULL,
  payload    jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
-- A signal_id is delivered once per run, whether it is still buffered or already journaled.
CREATE UNIQUE INDEX signal_inbox_signal_id ON signal_inbox (run_id, signal_id);
-- "The earliest buffered signal of this name": FIFO per run and name.
CREATE INDEX signal_inbox_fifo ON signal_inbox (run_id, name, id);

-- suspensionList (ListApprovals, oldest first): suspended entries by kind and age. Partial, so
-- effects and resolutions do not bloat it; it grows with the number of waits ever started.
CREATE INDEX journal_suspensions ON journal (kind, created_at, run_id, seq) WHERE status = 'suspended';
