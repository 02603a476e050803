-- 0012_flows: declarative flows registered over the API (docs/flows.md). Forward-only.

-- One row per version of a flow. `digest` is the sha256 of the definition's canonical JSON (what a
-- run of it pins as its workflow_digest); `definition` is the Flow message's JSON form, validated
-- by the engine before it is stored. Versions of one (namespace, name) are 1, 2, ... with no gap.
CREATE TABLE flows (
  namespace  text NOT NULL,
  name       text NOT NULL,
  version    integer NOT NULL,
  digest     text NOT NULL,
  definition jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, name, version)
);
