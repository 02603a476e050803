import type pg from 'pg';
import type { Json } from '../../journal/run.js';
import type {
  WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams, WebhookDeliveryState,
  WebhookEndpoint, WebhookEndpointCreateParams, WebhookEndpointRotateParams, WebhookEventType, WebhookSecret,
} from '../webhook-params.js';

/*
 * Named statements on `webhook_endpoints` and `webhook_deliveries` (migration 0010), and the
 * outbox inserts the status statements of runs-queries.ts embed, so the deliveries of a
 * `run.finished` (an approval.pending) commit with the terminal (SUSPENDED) status or not at all.
 */

const MS = `* interval '1 millisecond'`;

/** A timestamptz as the ISO 8601 UTC text JavaScript's toISOString writes. */
const isoUtc = (ts: string): string => `to_char(${ts} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/** Whether the element `s` of an endpoint's `secrets` is unexpired (and so signs). */
const SECRET_LIVE = `COALESCE((s->>'expiresAt')::timestamptz, 'infinity') > now()`;

/**
 * The outbox insert, as a CTE body: for every row of `src` (a run just set terminal, with the
 * columns id, namespace, workflow_name, workflow_version, status, output, error and next_seq, its
 * status entry at next_seq - 1) one delivery per endpoint of its namespace that takes
 * `run.finished`. The message id is derived from the run and the status entry's seq: the same
 * for every endpoint and attempt, different when a resumed run finishes again.
 */
export function runFinishedOutboxInsert(src: string): string {
  return `INSERT INTO webhook_deliveries (id, message_id, endpoint_id, namespace, event_type, run_id, payload)
    SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), 'msg_' || s.id || '_' || (s.next_seq - 1), e.id, s.namespace,
           'run.finished', s.id,
           jsonb_build_object('type', 'run.finished', 'timestamp', ${isoUtc('now()')},
             'data', jsonb_build_object('runId', s.id, 'namespace', s.namespace, 'workflow', s.workflow_name,
               'workflowVersion', s.workflow_version, 'status', s.status, 'output', s.output, 'error', s.error))
      FROM ${src} s JOIN webhook_endpoints e ON e.namespace = s.namespace AND 'run.finished' = ANY (e.events)
     WHERE s.status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`;
}

/**
 * The approval.pending outbox insert, as a CTE body: for every row of `src` (a run whose status
 * was just written, columns as above) that is now SUSPENDED, one delivery per open approval wait
 * of the run (a `suspended` approval entry no resolution or invalidation points at) and endpoint
 * of its namespace that takes `approval.pending`. The message id names the approval
 * (`msg_<run>_approval_<seq>`), and the unique (endpoint_id, message_id) makes a run that parks
 * again on the same undecided approval (after a signal, a restart) add nothing. The data reads the
 * suspension payload's title, description and deadlineAt (engine/runtime/suspension.ts).
 */
export function approvalPendingOutboxInsert(src: string): string {
  return `INSERT INTO webhook_deliveries (id, message_id, endpoint_id, namespace, event_type, run_id, payload)
    SELECT 'whd_' || replace(gen_random_uuid()::text, '-', ''), 'msg_' || s.id || '_approval_' || j.seq, e.id, s.namespace,
           'approval.pending', s.id,
           jsonb_build_object('type', 'approval.pending', 'timestamp', ${isoUtc('now()')},
             'data', jsonb_build_object('approvalId', s.id || ':' || j.seq, 'runId', s.id, 'namespace', s.namespace,
               'workflow', s.workflow_name, 'workflowVersion', s.workflow_version, 'name', j.name,
               'title', COALESCE(j.payload->>'title', j.name), 'description', j.payload->'description',
               'deadline', j.payload->'deadlineAt'))
      FROM ${src} s
      JOIN journal j ON j.run_id = s.id AND j.status = 'suspended' AND j.kind = 'approval'
      JOIN webhook_endpoints e ON e.namespace = s.namespace AND 'approval.pending' = ANY (e.events)
     WHERE s.status = 'SUSPENDED'
       AND NOT EXISTS (SELECT 1 FROM journal x WHERE x.run_id = j.run_id AND x.ref_seq = j.seq AND x.status IN ('resolved', 'cancelled'))
    ON CONFLICT (endpoint_id, message_id) DO NOTHING`;
}

export interface EndpointRow {
  id: string; namespace: string; url: string; events: string[]; secrets: Array<{ secret: string; expiresAt: string | null }>;
  description: string; created_at: Date; updated_at: Date;
}

export function toEndpoint(row: EndpointRow): WebhookEndpoint {
  return {
    id: row.id, namespace: row.namespace, url: row.url, events: row.events as WebhookEventType[],
    secrets: row.secrets.map((s): WebhookSecret => ({ secret: s.secret, expiresAt: s.expiresAt === null ? null : new Date(s.expiresAt) })),
    description: row.description, createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at),
  };
}

const ENDPOINT_COLUMNS = 'id, namespace, url, events, secrets, description, created_at, updated_at';

export function endpointCreate(p: WebhookEndpointCreateParams): pg.QueryConfig {
  return {
    name: 'webhook_endpoint_create',
    text: `INSERT INTO webhook_endpoints (id, namespace, url, events, secrets, description)
      VALUES ($1, $2, $3, $4, jsonb_build_array(jsonb_build_object('secret', $5::text, 'expiresAt', NULL)), $6)
      RETURNING ${ENDPOINT_COLUMNS}`,
    values: [p.id, p.namespace, p.url, p.events, p.secret, p.description],
  };
}

export function endpointList(namespace: string): pg.QueryConfig {
  return {
    name: 'webhook_endpoint_list',
    text: `SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE namespace = $1 ORDER BY created_at, id`,
    values: [namespace],
  };
}

export function endpointDelete(namespace: string, endpointId: string): pg.QueryConfig {
  return {
    name: 'webhook_endpoint_delete',
    text: 'DELETE FROM webhook_endpoints WHERE namespace = $1 AND id = $2 RETURNING id',
    values: [namespace, endpointId],
  };
}

/**
 * Rotation: the new secret goes first; the ones signing until now get an expiry `overlapMs` from
 * now (or keep an earlier one), and secrets already expired are dropped.
 */
export function endpointRotate(p: WebhookEndpointRotateParams): pg.QueryConfig {
  return {
    name: 'webhook_endpoint_rotate',
    text: `UPDATE webhook_endpoints SET updated_at = now(), secrets =
        jsonb_build_array(jsonb_build_object('secret', $3::text, 'expiresAt', NULL))
        || COALESCE((
          SELECT jsonb_agg(jsonb_build_object('secret', s->>'secret', 'expiresAt',
                   ${isoUtc(`LEAST(COALESCE((s->>'expiresAt')::timestamptz, 'infinity'), now() + $4::integer ${MS})`)}))
            FROM jsonb_array_elements(secrets) s
           WHERE ${SECRET_LIVE} AND $4::integer > 0
        ), '[]'::jsonb)
      WHERE namespace = $1 AND id = $2
      RETURNING ${ENDPOINT_COLUMNS}`,
    values: [p.namespace, p.endpointId, p.secret, p.overlapMs],
  };
}

export interface DeliveryRow {
  id: string; message_id: string; endpoint_id: string; namespace: string; event_type: string; run_id: string; payload: Json;
  state: string; attempts: number; next_attempt_at: Date; last_error: string | null; last_status: number | null;
  created_at: Date; delivered_at: Date | null;
}

export function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id, messageId: row.message_id, endpointId: row.endpoint_id, namespace: row.namespace,
    eventType: row.event_type as WebhookEventType, runId: row.run_id, payload: row.payload, state: row.state as WebhookDeliveryState,
    attempts: row.attempts, nextAttemptAt: new Date(row.next_attempt_at), lastError: row.last_error, lastStatus: row.last_status,
    createdAt: new Date(row.created_at), deliveredAt: row.delivered_at === null ? null : new Date(row.delivered_at),
  };
}

const DELIVERY_COLUMNS = `d.id, d.message_id, d.endpoint_id, d.namespace, d.event_type, d.run_id, d.payload, d.state, d.attempts,
  d.next_attempt_at, d.last_error, d.last_status, d.created_at, d.delivered_at`;

/**
 * Claims due deliveries for one attempt each: pending, due, not under another live claim; rows
 * another dispatcher is claiming are skipped, never waited for. The attempt is counted at claim
 * time, so one cut short by a crash counts too.
 */
export function deliveryClaim(p: WebhookDeliveryClaimParams): pg.QueryConfig {
  return {
    name: 'webhook_delivery_claim',
    text: `WITH due AS (
        SELECT id FROM webhook_deliveries
         WHERE state = 'pending' AND next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
         ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED
      ), claimed AS (
        UPDATE webhook_deliveries d SET claimed_until = clock_timestamp() + $2::integer ${MS}, claim_token = $3,
          attempts = d.attempts + 1, updated_at = now()
          FROM due WHERE d.id = due.id
        RETURNING ${DELIVERY_COLUMNS}
      )
      SELECT to_jsonb(c) AS delivery, e.url,
             COALESCE((SELECT array_agg(s->>'secret') FROM jsonb_array_elements(e.secrets) s
                        WHERE ${SECRET_LIVE}), '{}') AS secrets
        FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id`,
    values: [p.limit, p.claimTtlMs, p.claimToken],
  };
}

/** Completes a claimed attempt; nothing happens unless the claim token still holds. */
export function deliveryComplete(p: WebhookDeliveryCompleteParams): pg.QueryConfig {
  const o = p.outcome;
  return {
    name: 'webhook_delivery_complete',
    text: `UPDATE webhook_deliveries SET state = $3, claimed_until = NULL, claim_token = NULL, updated_at = now(),
        next_attempt_at = CASE WHEN $3 = 'pending' THEN clock_timestamp() + $4::integer ${MS} ELSE next_attempt_at END,
        last_error = $5, last_status = $6, delivered_at = CASE WHEN $3 = 'delivered' THEN now() END
      WHERE id = $1 AND claim_token = $2
      RETURNING id`,
    values: [p.deliveryId, p.claimToken, o.state, o.state === 'pending' ? o.retryInMs : 0, o.state === 'delivered' ? null : o.error, o.status],
  };
}

export function deliveryList(p: WebhookDeliveryListParams): pg.QueryConfig {
  return {
    name: 'webhook_delivery_list',
    text: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries d
      WHERE d.namespace = $1 AND ($2::text IS NULL OR d.endpoint_id = $2) AND ($3::text IS NULL OR d.state = $3)
        AND ($4::text IS NULL OR d.run_id = $4) AND ($6::timestamptz IS NULL OR (d.created_at, d.id) < ($6, $7::text))
      ORDER BY d.created_at DESC, d.id DESC LIMIT $5`,
    values: [p.namespace, p.endpointId ?? null, p.state ?? null, p.runId ?? null, p.limit, p.after?.createdAt ?? null, p.after?.id ?? null],
  };
}

/** A delivered or dead delivery becomes pending again, due now, with its attempts counted afresh. */
export function deliveryRedeliver(namespace: string, deliveryId: string): pg.QueryConfig {
  return {
    name: 'webhook_delivery_redeliver',
    text: `WITH target AS (SELECT id, state FROM webhook_deliveries WHERE namespace = $1 AND id = $2 FOR UPDATE),
      reset AS (
        UPDATE webhook_deliveries d SET state = 'pending', attempts = 0, next_attempt_at = now(), claimed_until = NULL,
          claim_token = NULL, delivered_at = NULL, updated_at = now()
          FROM target t WHERE d.id = t.id AND t.state <> 'pending'
        RETURNING ${DELIVERY_COLUMNS}
      )
      SELECT t.state AS previous, (SELECT to_jsonb(r) FROM reset r) AS delivery FROM target t`,
    values: [namespace, deliveryId],
  };
}
