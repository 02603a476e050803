import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { InvalidPageTokenError } from '../engine/index.js';
import type {
  JournalStore, WebhookDelivery, WebhookDeliveryState, WebhookEndpoint, WebhookEventType,
} from '../store/store.js';
import { newWebhookSecret } from './signing.js';

export { DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENT_TYPES } from '../store/webhook-params.js';
export type { WebhookDelivery, WebhookDeliveryState, WebhookEndpoint, WebhookEventType } from '../store/webhook-params.js';

/*
 * The use cases of WebhookService (server/routes/webhook-service.ts validates and converts, then calls
 * one method here): endpoints with generated ids and secrets, deliveries paged newest first.
 * Secrets leave the server only in the answers of create and rotate.
 */

export const DEFAULT_ROTATION_OVERLAP_MS = 86_400_000;

export interface EndpointWithSecret {
  endpoint: WebhookEndpoint;
  secret: string;
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[];
  nextPageToken: string;
}

export class WebhookApi {
  constructor(private readonly store: JournalStore, private readonly logger: Logger) {}

  async endpointCreate(p: { namespace: string; url: string; events: WebhookEventType[]; description: string }): Promise<EndpointWithSecret> {
    const secret = newWebhookSecret();
    const endpoint = await this.store.webhookEndpointCreate({ id: `ep_${randomUUID().replace(/-/g, '')}`, secret, ...p });
    // The URL may carry a token in its path or query: log the origin only.
    this.logger.info({ endpointId: endpoint.id, namespace: p.namespace, origin: new URL(p.url).origin, events: p.events }, 'webhook endpoint registered');
    return { endpoint, secret };
  }

  endpointList(p: { namespace: string }): Promise<WebhookEndpoint[]> {
    return this.store.webhookEndpointList(p);
  }

  async endpointDelete(p: { namespace: string; endpointId: string }): Promise<void> {
    await this.store.webhookEndpointDelete(p);
    this.logger.info({ endpointId: p.endpointId, namespace: p.namespace }, 'webhook endpoint deleted');
  }

  async secretRotate(p: { namespace: string; endpointId: string; overlapMs: number }): Promise<EndpointWithSecret> {
    const secret = newWebhookSecret();
    const endpoint = await this.store.webhookEndpointRotate({ ...p, secret });
    this.logger.info({ endpointId: p.endpointId, namespace: p.namespace, overlapMs: p.overlapMs }, 'webhook secret rotated');
    return { endpoint, secret };
  }

  async deliveryList(p: {
    namespace: string; endpointId?: string | undefined; state?: WebhookDeliveryState | undefined; runId?: string | undefined;
    pageSize: number; pageToken: string;
  }): Promise<DeliveryPage> {
    const filters = JSON.stringify([p.namespace, p.endpointId ?? '', p.state ?? '', p.runId ?? '']);
    const after = p.pageToken === '' ? undefined : decodeToken(p.pageToken, filters);
    const page = await this.store.webhookDeliveryList({
      namespace: p.namespace, endpointId: p.endpointId, state: p.state, runId: p.runId, limit: p.pageSize, after,
    });
    return { deliveries: page.deliveries, nextPageToken: page.next ? encodeToken(page.next, filters) : '' };
  }

  redeliver(p: { namespace: string; deliveryId: string }): Promise<WebhookDelivery> {
    return this.store.webhookDeliveryRedeliver(p);
  }
}

/** A delivery page token: the last delivery's (createdAt, id) and the filters it was issued for. */
function encodeToken(next: { createdAt: Date; id: string }, filters: string): string {
  return Buffer.from(JSON.stringify({ v: 1, t: next.createdAt.toISOString(), id: next.id, f: filters })).toString('base64url');
}

function decodeToken(token: string, filters: string): { createdAt: Date; id: string } {
  let body: { v?: unknown; t?: unknown; id?: unknown; f?: unknown };
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as typeof body;
  } catch {
    throw new InvalidPageTokenError('is not a token ListWebhookDeliveries issued');
  }
  if (body?.v !== 1 || typeof body.t !== 'string' || typeof body.id !== 'string' || !/^whd_[0-9a-f]{32}$/.test(body.id) || Number.isNaN(Date.parse(body.t))) {
    throw new InvalidPageTokenError('is not a token ListWebhookDeliveries issued');
  }
  if (body.f !== filters) throw new InvalidPageTokenError('was issued for other filters; repeat the first request\'s filters or start over');
  return { createdAt: new Date(body.t), id: body.id };
}
