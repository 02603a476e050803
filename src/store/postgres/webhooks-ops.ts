import { WebhookDeliveryNotFoundError, WebhookDeliveryPendingError, WebhookEndpointNotFoundError } from '../../journal/webhook-errors.js';
import type {
  WebhookClaim, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams, WebhookDeliveryListResult,
  WebhookDelivery, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams, WebhookEndpointDeleteParams,
  WebhookEndpointListParams, WebhookEndpointRotateParams,
} from '../webhook-params.js';
import type { PgAccess } from './pg-access.js';
import * as wq from './webhooks-queries.js';

/* The webhook methods of PostgresStore (WebhookOps in webhook-params.ts documents each). */

export async function webhookEndpointCreate(db: PgAccess, params: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
  return wq.toEndpoint((await db.query<wq.EndpointRow>(wq.endpointCreate(params))).rows[0]!);
}

export async function webhookEndpointList(db: PgAccess, params: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
  return (await db.query<wq.EndpointRow>(wq.endpointList(params.namespace))).rows.map(wq.toEndpoint);
}

export async function webhookEndpointDelete(db: PgAccess, params: WebhookEndpointDeleteParams): Promise<void> {
  const { rows } = await db.query(wq.endpointDelete(params.namespace, params.endpointId));
  if (rows.length === 0) throw new WebhookEndpointNotFoundError(params.endpointId);
}

export async function webhookEndpointRotate(db: PgAccess, params: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
  const row = (await db.query<wq.EndpointRow>(wq.endpointRotate(params))).rows[0];
  if (!row) throw new WebhookEndpointNotFoundError(params.endpointId);
  return wq.toEndpoint(row);
}

export async function webhookDeliveryClaim(db: PgAccess, params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
  if (params.limit <= 0) return [];
  const { rows } = await db.query<{ delivery: wq.DeliveryRow; url: string; secrets: string[] }>(wq.deliveryClaim(params));
  return rows.map((r) => ({ delivery: wq.toDelivery(r.delivery), claimToken: params.claimToken, url: r.url, secrets: r.secrets }));
}

export async function webhookDeliveryComplete(db: PgAccess, params: WebhookDeliveryCompleteParams): Promise<boolean> {
  return (await db.query(wq.deliveryComplete(params))).rows.length > 0;
}

export async function webhookDeliveryList(db: PgAccess, params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
  const deliveries = (await db.query<wq.DeliveryRow>(wq.deliveryList(params))).rows.map(wq.toDelivery);
  const last = deliveries.at(-1);
  return { deliveries, next: deliveries.length === params.limit && last ? { createdAt: last.createdAt, id: last.id } : null };
}

export async function webhookDeliveryRedeliver(db: PgAccess, params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
  const row = (await db.query<{ previous: string; delivery: wq.DeliveryRow | null }>(wq.deliveryRedeliver(params.namespace, params.deliveryId))).rows[0];
  if (!row) throw new WebhookDeliveryNotFoundError(params.deliveryId);
  if (!row.delivery) throw new WebhookDeliveryPendingError(params.deliveryId);
  return wq.toDelivery(row.delivery);
}
