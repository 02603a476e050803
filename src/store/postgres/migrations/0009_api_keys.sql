-- 0009_api_keys: API keys that authenticate RPCs (docs/security.md "API keys"). Forward-only.

-- A key's secret is "wmk_<id>_<random>"; only its SHA-256 (hex) is stored, so a copy of this table
-- authenticates nobody. `namespace` NULL is an admin key (every namespace). `scopes` are names the
-- server interprets (runs:read, runs:write, approvals:decide, signals:send, admin). A revoked key
-- keeps its row (listing, audit: decisions record the key id that made them).
CREATE TABLE api_keys (
  id                text PRIMARY KEY,
  name              text NOT NULL DEFAULT '',
  namespace         text,
  scopes            text[] NOT NULL,
  secret_sha256     text NOT NULL,
  created_at        timestamptz NOT NULL DEFAULT now(),
  revoked_at        timestamptz,
  created_by_key_id text
);

CREATE INDEX api_keys_listing ON api_keys (created_at DESC, id);
