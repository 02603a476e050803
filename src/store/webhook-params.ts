import type { Json } from '../journal/run.js';

/*
 * Webhook endpoints and the outbox of their deliveries (docs/security.md "Webhooks"). A store
 * writes the deliveries of a run's `run.finished` in the same atomic step as the run's terminal
 * status (runStatusSet, runStatusForce, runRecoverExpired), and those of `approval.pending` in the
 * step that sets SUSPENDED (runStatusSet, runStatusForce): one per open approval of the run, at
 * most once per approval and endpoint however often the run parks. One delivery per endpoint of
 * the run's namespace that subscribes to the type; dispatchers claim and complete them.
 */

export const WEBHOOK_EVENT_TYPES = ['run.finished', 'approval.pending'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** What an endpoint created without a list of events receives: approval.pending is opt-in. */
export const DEFAULT_WEBHOOK_EVENTS: readonly WebhookEventType[] = ['run.finished'];

export type WebhookDeliveryState = 'pending' | 'delivered' | 'dead';

export interface WebhookSecret {
  /** `whsec_` + base64 of the key bytes (Standard Webhooks). */
  secret: string;
  /** After this the secret no longer signs; null while it is the current one. */
  expiresAt: Date | null;
}

export interface WebhookEndpoint {
  id: string;
  namespace: string;
  url: string;
  events: WebhookEventType[];
  /** Newest first; the unexpired ones sign every delivery. */
  secrets: WebhookSecret[];
  description: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface WebhookDelivery {
  id: string;
  /** The `webhook-id` header: the same on every attempt and every endpoint; receivers dedupe on it. */
  messageId: string;
  endpointId: string;
  namespace: string;
  eventType: WebhookEventType;
  runId: string;
  /** The body sent, `{ type, timestamp, data }`. */
  payload: Json;
  state: WebhookDeliveryState;
  /** Attempts claimed so far (an attempt cut short by a crash counts). */
  attempts: number;
  nextAttemptAt: Date;
  lastError: string | null;
  /** HTTP status of the last answer; null when there was none (refused, timed out, crashed). */
  lastStatus: number | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

export interface WebhookEndpointCreateParams {
  id: string;
  namespace: string;
  url: string;
  events: WebhookEventType[];
  secret: string;
  description: string;
}

export interface WebhookEndpointListParams {
  namespace: string;
}

export interface WebhookEndpointDeleteParams {
  namespace: string;
  endpointId: string;
}

export interface WebhookEndpointRotateParams {
  namespace: string;
  endpointId: string;
  /** The new current secret. */
  secret: string;
  /** How long the secrets signing so far go on signing (store clock); 0 retires them at once. */
  overlapMs: number;
}

/** A delivery claimed for one attempt, with what the attempt needs. */
export interface WebhookClaim {
  delivery: WebhookDelivery;
  /** Fences the completion: only the holder of this claim completes it. */
  claimToken: string;
  url: string;
  /** The endpoint's secrets that sign now (unexpired on the store clock), newest first. */
  secrets: string[];
}

export interface WebhookDeliveryClaimParams {
  limit: number;
  /** The claim lapses this long after it is taken (store clock); another dispatcher may then retry. */
  claimTtlMs: number;
  claimToken: string;
}

export type WebhookDeliveryOutcome =
  | { state: 'delivered'; status: number }
  | { state: 'pending'; retryInMs: number; error: string; status: number | null }
  | { state: 'dead'; error: string; status: number | null };

export interface WebhookDeliveryCompleteParams {
  deliveryId: string;
  claimToken: string;
  outcome: WebhookDeliveryOutcome;
}

export interface WebhookDeliveryListParams {
  namespace: string;
  endpointId?: string | undefined;
  state?: WebhookDeliveryState | undefined;
  runId?: string | undefined;
  limit: number;
  /** Deliveries created before this one (createdAt, then id, descending); absent from the newest. */
  after?: { createdAt: Date; id: string } | undefined;
}

export interface WebhookDeliveryListResult {
  deliveries: WebhookDelivery[];
  /** The last delivery of a full page, to pass as `after`; null on the last page. */
  next: { createdAt: Date; id: string } | null;
}

export interface WebhookDeliveryRedeliverParams {
  namespace: string;
  deliveryId: string;
}

/**
 * Webhook endpoints and the outbox of their deliveries. Part of JournalStore (store.ts), whose
 * contract holds for each method.
 */
export interface WebhookOps {
  /**
   * Webhooks (webhook-params.ts; docs/security.md "Webhooks"). Every terminal status written by
   * runStatusSet, runStatusForce or runRecoverExpired also writes, atomically with it, one pending
   * delivery of `run.finished` per endpoint of the run's namespace that takes it: the outbox.
   * An endpoint starts with one secret; ids are the caller's.
   */
  webhookEndpointCreate(params: WebhookEndpointCreateParams): Promise<WebhookEndpoint>;
  /** The namespace's endpoints, oldest first. */
  webhookEndpointList(params: WebhookEndpointListParams): Promise<WebhookEndpoint[]>;
  /** Deletes the endpoint and its deliveries; WebhookEndpointNotFoundError when it is not in the namespace. */
  webhookEndpointDelete(params: WebhookEndpointDeleteParams): Promise<void>;
  /**
   * Makes `secret` the current secret; the secrets signing until now go on signing for
   * `overlapMs` (store clock), expired ones are dropped. WebhookEndpointNotFoundError as delete.
   */
  webhookEndpointRotate(params: WebhookEndpointRotateParams): Promise<WebhookEndpoint>;
  /**
   * Claims up to `limit` due pending deliveries (oldest due first) for one attempt each, counting
   * the attempt; a claim lapses after `claimTtlMs`, so a dispatcher that died mid-attempt leaves
   * the delivery to another. Two claimers never hold one delivery at once, and neither waits for
   * the other's rows. Deliveries of deleted endpoints are gone with them.
   */
  webhookDeliveryClaim(params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]>;
  /** Records the attempt's outcome; false (nothing changed) when the claim lapsed and was taken or completed. */
  webhookDeliveryComplete(params: WebhookDeliveryCompleteParams): Promise<boolean>;
  /** The namespace's deliveries, newest first, optionally of one endpoint, state or run. */
  webhookDeliveryList(params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult>;
  /**
   * A delivered or dead delivery becomes pending again, due now, attempts counted from 0, with the
   * same message id. WebhookDeliveryNotFoundError outside the namespace; WebhookDeliveryPendingError
   * when it is still pending.
   */
  webhookDeliveryRedeliver(params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery>;
}
