-- 0014_lease_sessions: a lease whose holder's database session is gone is dead at once, not at its
-- expiry (docs/recovery.md "Dead sessions"). Forward-only.

-- Keys of the session advisory locks that mark a holder's session alive: pg_advisory_lock(1465470283,
-- lock_key), 1465470283 being 'WYMK' in ASCII. Integers, so the key is the lock's objid as is.
CREATE SEQUENCE lease_session_keys AS integer CYCLE;

-- One row per lease holder (server process) that holds such a lock on a dedicated session. The row
-- is written on that session after the lock is taken, so while the row points at a key whose lock
-- nobody holds, that session has ended: the holder died (or lost its connection), and the sweeper
-- reclaims its RUNNING runs at once. A holder without a row is reclaimed at its leases' expiry only.
CREATE TABLE lease_sessions (
  holder    text PRIMARY KEY,
  lock_key  integer NOT NULL,
  opened_at timestamptz NOT NULL DEFAULT now()
);

-- The dead-session reclaim finds a dead holder's RUNNING runs by holder.
CREATE INDEX runs_running_holder ON runs (lease_holder) WHERE status = 'RUNNING';

-- Spend without reading the journal (GetRun, the budget check before each model call; issue 22):
-- the entries that carry a cost and the model calls' intents (their reservations), by run. Steps,
-- tools and waits are not in it, so the fold costs the run's model calls, not its journal.
CREATE INDEX journal_priced ON journal (run_id, seq) WHERE cost_usd IS NOT NULL OR kind = 'model';
