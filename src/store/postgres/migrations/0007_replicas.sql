-- 0007_replicas: which replica serves which workflow definitions, so a replica claims only runs it
-- can execute and StartRun knows what some live replica serves (docs/recovery.md "Routing").
-- Forward-only.

-- One row per live replica (server process), upserted at start and on every heartbeat. A row whose
-- expires_at passed is a replica that stopped heartbeating: readers ignore it, a later heartbeat of
-- the same id revives it, and a clean stop deletes it. `workflows` is a JSON array of
-- { name, version, digest, drift, description, inputSchema }.
CREATE TABLE replicas (
  id           text PRIMARY KEY,
  workflows    jsonb NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL
);
