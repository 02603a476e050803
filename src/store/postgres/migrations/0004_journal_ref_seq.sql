-- 0004_journal_ref_seq: find the entries that refer to a given entry (its resolutions, its
-- cancellation, an effect's outcome) by (run_id, ref_seq). Forward-only.

-- "Is this suspension still open?" is `NOT EXISTS (... x.ref_seq = s.seq AND x.status IN
-- ('resolved', 'cancelled'))`. journal_winning_resolution covers only resolved entries, so the
-- cancelled half scanned every entry of the run once per suspension: SendSignal's delivery facts
-- (run under the run-row lock) grew with the square of the journal, ~22 ms for a run that had
-- waited 200 times. With this index each probe is one index lookup. Partial: entries with no
-- ref_seq (heads, suspensions, single-phase effects) are never looked up this way.
CREATE INDEX journal_ref_seq ON journal (run_id, ref_seq) WHERE ref_seq IS NOT NULL;
