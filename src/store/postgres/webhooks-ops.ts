import type pg from 'pg';
import { WebhookDeliveryNotFoundError, WebhookDeliveryPendingError, WebhookEndpointNotFoundError } from '../../journal/webhook-errors.js';
import type {
  WebhookClaim, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams, WebhookDeliveryListResult,
  WebhookDelivery, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams, WebhookEndpointDeleteParams,
  WebhookEndpointListParams, WebhookEndpointRotateParams,
} from '../webhook-params.js';
import * as wq from './webhooks-queries.js';

/* The webhook methods of PostgresStore (store.ts documents each), over its translated query. */

export type Query = <R extends pg.QueryResultRow>(query: pg.QueryConfig) => Promise<pg.QueryResult<R>>;

export async function webhookEndpointCreate(query: Query, params: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
  return wq.toEndpoint((await query<wq.EndpointRow>(wq.endpointCreate(params))).rows[0]!);
}

export async function webhookEndpointList(query: Query, params: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
  return (await query<wq.EndpointRow>(wq.endpointList(params.namespace))).rows.map(wq.toEndpoint);
}

export async function webhookEndpointDelete(query: Query, params: WebhookEndpointDeleteParams): Promise<void> {
  const { rows } = await query(wq.endpointDelete(params.namespace, params.endpointId));
  if (rows.length === 0) throw new WebhookEndpointNotFoundError(params.endpointId);
}

export async function webhookEndpointRotate(query: Query, params: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
  const row = (await query<wq.EndpointRow>(wq.endpointRotate(params))).rows[0];
  if (!row) throw new WebhookEndpointNotFoundError(params.endpointId);
  return wq.toEndpoint(row);
}

export async function webhookDeliveryClaim(query: Query, params: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
  if (params.limit <= 0) return [];
  const { rows } = await query<{ delivery: wq.DeliveryRow; url: string; secrets: string[] }>(wq.deliveryClaim(params));
  return rows.map((r) => ({ delivery: wq.toDelivery(r.delivery), claimToken: params.claimToken, url: r.url, secrets: r.secrets }));
}

export async function webhookDeliveryComplete(query: Query, params: WebhookDeliveryCompleteParams): Promise<boolean> {
  return (await query(wq.deliveryComplete(params))).rows.length > 0;
}

export async function webhookDeliveryList(query: Query, params: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
  const deliveries = (await query<wq.DeliveryRow>(wq.deliveryList(params))).rows.map(wq.toDelivery);
  const last = deliveries.at(-1);
  return { deliveries, next: deliveries.length === params.limit && last ? { createdAt: last.createdAt, id: last.id } : null };
}

export async function webhookDeliveryRedeliver(query: Query, params: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
  const row = (await query<{ previous: string; delivery: wq.DeliveryRow | null }>(wq.deliveryRedeliver(params.namespace, params.deliveryId))).rows[0];
  if (!row) throw new WebhookDeliveryNotFoundError(params.deliveryId);
  if (!row.delivery) throw new WebhookDeliveryPendingError(params.deliveryId);
  return wq.toDelivery(row.delivery);
}
