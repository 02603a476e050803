-- 0001_init: runs, their journals, open suspension deadlines, and the wake-up triggers.
-- Forward-only: a change to this schema is a new numbered file, never an edit here.

CREATE TABLE runs (
  id               uuid PRIMARY KEY,            -- UUIDv7 from the store: time-ordered inserts
  namespace        text NOT NULL,
  workflow_name    text NOT NULL,
  workflow_version text NOT NULL,
  workflow_digest  text NOT NULL,
  status           text NOT NULL
                   CHECK (status IN ('PENDING', 'RUNNING', 'SUSPENDED', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
  input            jsonb NOT NULL,
  output           jsonb,
  error            jsonb,
  labels           jsonb NOT NULL DEFAULT '{}',
  idempotency_key  text,
  parent_run_id    uuid REFERENCES runs (id),
  parent_seq       integer,
  budget_usd       numeric,
  dry_run          boolean NOT NULL DEFAULT false,
  -- The lease: holder and expiry on the database clock; lease_epoch is the fencing token every
  -- fenced write compares. A released lease keeps its epoch and clears the holder.
  lease_holder     text,
  lease_expires_at timestamptz,
  lease_epoch      bigint NOT NULL DEFAULT 0,
  -- The seq the next journal entry gets, advanced under this row's lock: a dense, commit-ordered
  -- per-run cursor (a global serial would commit out of order; reliability.md E9).
  next_seq         integer NOT NULL DEFAULT 0,
  recovery_count   integer NOT NULL DEFAULT 0,
  -- Set when a resolution is applied while the run is RUNNING: its next SUSPENDED becomes PENDING.
  resume_requested boolean NOT NULL DEFAULT false,
  -- Millisecond precision so the runList cursor round-trips through a JS Date exactly.
  created_at       timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK ((lease_holder IS NULL) = (lease_expires_at IS NULL))
);

CREATE UNIQUE INDEX runs_idempotency_key ON runs (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- runClaim: only PENDING runs, oldest first. Partial, so it stays as small as the queue.
CREATE INDEX runs_pending ON runs (created_at, id) WHERE status = 'PENDING';
-- runRecoverExpired: RUNNING runs by lease expiry.
CREATE INDEX runs_lease_expiry ON runs (lease_expires_at) WHERE status = 'RUNNING';
-- runList: newest first within a namespace, id breaking ties (the cursor is (created_at, id)).
CREATE INDEX runs_listing ON runs (namespace, created_at DESC, id DESC);
CREATE INDEX runs_parent ON runs (parent_run_id) WHERE parent_run_id IS NOT NULL;

CREATE TABLE journal (
  run_id          uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq             integer NOT NULL,
  scope           text NOT NULL,
  kind            text NOT NULL,
  name            text NOT NULL,
  content_key     text NOT NULL,
  occurrence      integer NOT NULL,
  status          text NOT NULL
                  CHECK (status IN ('running', 'ok', 'error', 'cancelled', 'suspended', 'resolved', 'noop', 'info')),
  payload         jsonb,
  error           jsonb,
  ref_seq         integer,
  idempotency_key text,
  dedupe_key      text,
  usage           jsonb,
  cost_usd        numeric,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, seq)
);

-- A signal_id / request_id is applied once per run.
CREATE UNIQUE INDEX journal_dedupe_key ON journal (run_id, dedupe_key) WHERE dedupe_key IS NOT NULL;
-- First resolution wins, as a constraint: at most one winner per suspension. Also how the winner
-- is found.
CREATE UNIQUE INDEX journal_winning_resolution ON journal (run_id, ref_seq) WHERE status = 'resolved';

-- Open suspensions that have a deadline, one row each, deleted when the suspension is resolved or
-- its run ends. A side table rather than an index over journal: the journal is append-only, so an
-- index over all suspensions with deadlines would keep every resolved one forever and the sweeper's
-- "deadline passed" scan would grow with history. This table holds only what may still fire.
CREATE TABLE suspension_deadlines (
  run_id      uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  seq         integer NOT NULL,
  deadline_at timestamptz NOT NULL,
  PRIMARY KEY (run_id, seq)
);
CREATE INDEX suspension_deadlines_due ON suspension_deadlines (deadline_at);

-- Wake-ups. Triggers rather than pg_notify calls in each statement, so no write path can forget
-- one. NOTIFY is transactional: listeners hear it only after COMMIT, so a woken reader sees the write.
-- 'waymark_run' (payload: run id): the run's journal grew (appends, status entries, resolutions).
CREATE FUNCTION waymark_notify_journal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waymark_run', r.run_id::text) FROM (SELECT DISTINCT run_id FROM new_rows) r;
  RETURN NULL;
END $$;
CREATE TRIGGER journal_notify AFTER INSERT ON journal
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION waymark_notify_journal();

-- 'waymark_pending' (payload: run id): a run became claimable (created, recovered, resolved, released).
CREATE FUNCTION waymark_notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('waymark_pending', NEW.id::text);
  PERFORM pg_notify('waymark_run', NEW.id::text);
  RETURN NULL;
END $$;
CREATE TRIGGER runs_notify_created AFTER INSERT ON runs
  FOR EACH ROW WHEN (NEW.status = 'PENDING') EXECUTE FUNCTION waymark_notify_pending();
CREATE TRIGGER runs_notify_pending AFTER UPDATE OF status ON runs
  FOR EACH ROW WHEN (NEW.status = 'PENDING' AND OLD.status <> 'PENDING') EXECUTE FUNCTION waymark_notify_pending();
