-- 0006_journal_attempt: the attempt number of an effect entry (retries, docs/journal.md "Retries").
-- Forward-only.

-- 1 for an effect's first attempt, n for its n-th under a retry policy; a backoff timer carries
-- the attempt it leads to. NULL on status entries, resolutions and entries written before 0006.
-- Adding a nullable column without a default is a catalog change only: no table rewrite.
ALTER TABLE journal ADD COLUMN attempt integer;
