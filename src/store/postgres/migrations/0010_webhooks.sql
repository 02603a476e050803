-- 0010_webhooks: webhook endpoints per namespace and the transactional outbox of their deliveries
-- (docs/security.md "Webhooks"). Forward-only.

-- An endpoint: where a namespace's events go. `secrets` is a JSON array of
-- { secret: "whsec_…", expiresAt: ISO | null }, newest first; every unexpired one signs (two
-- during a rotation's overlap). `events` names the event types it receives.
CREATE TABLE webhook_endpoints (
  id          text PRIMARY KEY,
  namespace   text NOT NULL,
  url         text NOT NULL,
  events      text[] NOT NULL,
  secrets     jsonb NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_endpoints_namespace ON webhook_endpoints (namespace, created_at);

-- The outbox: one row per (endpoint, message), inserted by the same statement that writes the run's
-- terminal status, so a committed status always has its deliveries and a rolled-back one never
-- does. `message_id` is the webhook-id receivers dedupe on: the same on every attempt and every
-- endpoint. Dispatchers on every server claim due rows with FOR UPDATE SKIP LOCKED and hold them
-- until `claimed_until`; `claim_token` fences a completion by a dispatcher whose claim lapsed.
-- state: pending (to be attempted at next_attempt_at), delivered, dead (max attempts used; kept
-- for the API and redelivery).
CREATE TABLE webhook_deliveries (
  id              text PRIMARY KEY,
  message_id      text NOT NULL,
  endpoint_id     text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  namespace       text NOT NULL,
  event_type      text NOT NULL,
  run_id          text NOT NULL,
  payload         jsonb NOT NULL,
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  claimed_until   timestamptz,
  claim_token     text,
  last_error      text,
  last_status     integer,
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  delivered_at    timestamptz,
  UNIQUE (endpoint_id, message_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_namespace ON webhook_deliveries (namespace, created_at DESC, id);
