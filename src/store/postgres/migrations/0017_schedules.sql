-- 0017_schedules: schedules, runs started on a calendar (docs/schedules.md). Forward-only.

-- One row per (namespace, id). `spec`, `action` and `policies` are what the API was given (checked
-- before they are stored); `state` is what the ticker did (cursor, open runs, buffered starts, recent
-- actions, counters). `due_at` is when the ticker must look at the schedule next: its next tick, or
-- sooner while a run it started is open. `revision` moves on every write; writes compare-and-set on it.
CREATE TABLE schedules (
  namespace  text NOT NULL,
  id         text NOT NULL,
  spec       jsonb NOT NULL,
  action     jsonb NOT NULL,
  policies   jsonb NOT NULL,
  paused     boolean NOT NULL DEFAULT false,
  note       text NOT NULL DEFAULT '',
  state      jsonb NOT NULL,
  due_at     timestamptz,
  revision   bigint NOT NULL DEFAULT 1,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, id)
);

-- The ticker's scan: schedules that are not paused, by when they are due.
CREATE INDEX schedules_due ON schedules (due_at) WHERE NOT paused AND due_at IS NOT NULL;
