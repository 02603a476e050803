-- 0021_journal_bytes: how many bytes of payloads each run's journal holds, so the append's fence
-- can refuse one past WAYMARK_MAX_JOURNAL_BYTES in the statement that writes it (docs/journal.md
-- "Bounded journals"). Forward-only. Added with a constant default: no table rewrite. Runs of
-- before count from 0.
ALTER TABLE runs ADD COLUMN journal_bytes bigint NOT NULL DEFAULT 0;
