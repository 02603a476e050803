-- 0022_payloads: large journal payloads stored once, out of the journal row (docs/journal.md
-- "Large payloads"). Forward-only.

-- The payload of an entry whose JSON text is over the inline threshold (Limits.payloadInlineBytes,
-- WAYMARK_PAYLOAD_INLINE_BYTES) lives here, keyed by the SHA-256 of that text within its run, so a
-- run that journals the same large value twice stores it once. The journal row keeps only the hash
-- and the size: a page of entries reads small rows and never detoasts a payload it does not return.
-- Rows go with their run (ON DELETE CASCADE), so retention needs nothing more.
CREATE TABLE payloads (
  run_id     uuid NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  sha256     text NOT NULL,            -- hex of the SHA-256 of the payload's JSON text (UTF-8)
  size_bytes integer NOT NULL,         -- bytes of that text
  body       jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, sha256)
);

-- Set on an entry whose payload is in `payloads` (its `payload` is then NULL). Nullable without a
-- default: adding them rewrites nothing.
ALTER TABLE journal ADD COLUMN payload_sha256 text;
ALTER TABLE journal ADD COLUMN payload_bytes integer;
