-- 0019_model_deltas: token deltas of model calls while they run (docs/agents.md "Token streams").
-- Not the journal: a delta belongs to one attempt of a model call and may be lost with it; the
-- call's journaled result is the truth. Rows are deleted by the sweeper after a retention period
-- (deltaRetentionMs), long after the call's result was journaled. Forward-only.

-- The next delta offset of each run, advanced under this row's lock in the statement that inserts
-- the deltas: offsets are dense and commit in order, so a reader that reads "after offset N" never
-- skips a row that commits later (the same argument as runs.next_seq).
CREATE TABLE model_delta_counters (
  run_id      uuid PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
  next_offset bigint NOT NULL
);

CREATE TABLE model_deltas (
  run_id       uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  delta_offset bigint NOT NULL,             -- dense per run from 0: the resume cursor
  entry_seq    integer NOT NULL,            -- the model call's `running` entry
  attempt      bigint NOT NULL,             -- the lease epoch the call ran under
  idx          integer NOT NULL,            -- 0.. within the attempt (0 is the attempt's start)
  kind         text NOT NULL CHECK (kind IN ('start', 'text', 'tool_input')),
  text         text NOT NULL DEFAULT '',
  tool_call_id text,
  tool_name    text,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (run_id, delta_offset)
);
-- The sweeper's retention: oldest first.
CREATE INDEX model_deltas_created ON model_deltas (created_at);

-- 'waymark_delta' (payload: run id): a run's deltas grew. Its own channel, so journal followers
-- (executors, streams without deltas) are not woken by every batch of tokens.
CREATE FUNCTION waymark_notify_delta() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waymark_delta', r.run_id::text) FROM (SELECT DISTINCT run_id FROM new_rows) r;
  RETURN NULL;
END $$;
CREATE TRIGGER model_deltas_notify AFTER INSERT ON model_deltas
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waymark_notify_delta();
