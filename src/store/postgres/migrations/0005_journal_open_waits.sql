-- 0005_journal_open_waits: find a run's oldest open wait of one kind and name without walking its
-- journal. Forward-only.

-- SendSignal asks for the oldest `signal` wait of a name that no `resolved` or `cancelled` entry
-- points at (suspensionOpenOldest, and signalDeliver's facts under the run-row lock).
-- journal_suspensions leads with (kind, created_at), so for one run the planner either skip-scans
-- it across every run's waits of that kind or reads the run's whole journal by primary key. This
-- index reads that run's waits of that name in seq order and stops at the first open one (each
-- "still open?" probe is a journal_ref_seq lookup). Partial: only `suspended` entries, a small
-- share of a journal.
CREATE INDEX journal_open_waits ON journal (run_id, kind, name, seq) WHERE status = 'suspended';
