-- 0020_retention: purging finished run trees, and the cost ledger that outlives them
-- (docs/operations.md "Retention"). Forward-only.

-- Root runs that ended, oldest end first: the retention scan reads only these, so its cost grows
-- with what is due, not with the runs table (updated_at is a terminal run's end: nothing else
-- writes a finished run's row but a resume, which makes it unfinished again).
CREATE INDEX runs_finished_roots ON runs (updated_at, id)
  WHERE parent_run_id IS NULL AND status IN ('SUCCEEDED', 'FAILED', 'CANCELLED');

-- A purge deletes a run's outbox rows by run id; the outbox had no index on it.
CREATE INDEX webhook_deliveries_run ON webhook_deliveries (run_id);

-- One row per namespace, workflow and UTC day: `runs` purged that ended that day, and the priced
-- journal entries of purged runs written that day (model calls, USD, tokens). Added to by each
-- purge in the transaction that deletes the runs, so a figure is never counted twice or lost.
CREATE TABLE run_cost_daily (
  namespace     text NOT NULL,
  workflow_name text NOT NULL,
  day           date NOT NULL,
  runs          bigint NOT NULL DEFAULT 0,
  model_calls   bigint NOT NULL DEFAULT 0,
  cost_usd      numeric NOT NULL DEFAULT 0,
  input_tokens  bigint NOT NULL DEFAULT 0,
  output_tokens bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (namespace, workflow_name, day)
);
CREATE INDEX run_cost_daily_day ON run_cost_daily (day, namespace);
