import { create, type JsonObject } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import type { Logger } from 'pino';
import {
  WebhookDeliverySchema, WebhookDeliveryState as ProtoState, WebhookEndpointSchema, WebhookService,
  type WebhookDelivery as ProtoDelivery, type WebhookEndpoint as ProtoEndpoint,
} from '../../gen/waymark/v1/webhook_service_pb.js';
import {
  DEFAULT_ROTATION_OVERLAP_MS, DEFAULT_WEBHOOK_EVENTS, WEBHOOK_EVENT_TYPES, type WebhookApi, type WebhookDelivery, type WebhookDeliveryState, type WebhookEndpoint,
  type WebhookEventType,
} from '../../webhooks/webhook-api.js';
import { endpointUrlProblem } from '../../webhooks/target-guard.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.WebhookService: validate, convert, one WebhookApi call (webhooks/webhook-api.ts).
 * docs/security.md "Webhooks".
 */

export interface WebhookServiceDeps {
  api: WebhookApi;
  logger: Logger;
  defaultNamespace: string;
  /** WAYMARK_WEBHOOK_ALLOW_PRIVATE: endpoints may name private, loopback and link-local addresses. */
  allowPrivate: boolean;
}

const ENDPOINT_ID = /^ep_[0-9a-f]{32}$/;
const DELIVERY_ID = /^whd_[0-9a-f]{32}$/;
const DELIVERY_PAGE = { default: 50, max: 500 };
const STATES: Record<number, WebhookDeliveryState | undefined> = {
  [ProtoState.PENDING]: 'pending', [ProtoState.DELIVERED]: 'delivered', [ProtoState.DEAD]: 'dead',
};

export function webhookServiceImpl(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);
  const endpointId = (c: RequestCheck, id: string, field = 'endpoint_id'): string => {
    if (!ENDPOINT_ID.test(id)) c.fail(field, id === '' ? 'is required' : 'must be an endpoint id as CreateWebhookEndpoint returned it');
    return id;
  };

  return {
    async createWebhookEndpoint(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const problem = endpointUrlProblem(req.url, deps.allowPrivate);
      if (problem) c.fail('url', req.url === '' ? 'is required' : problem);
      const events = req.events.length === 0 ? [...DEFAULT_WEBHOOK_EVENTS] : [...new Set(req.events)];
      for (const e of events) if (!(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e)) c.fail('events', `unknown event type "${e}"; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
      const description = c.text('description', req.description, { max: 1024 });
      c.done();
      const r = await api.endpointCreate({ namespace, url: req.url, events: events as WebhookEventType[], description });
      return { endpoint: endpointToProto(r.endpoint), secret: r.secret };
    },

    async listWebhookEndpoints(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      return { endpoints: (await api.endpointList({ namespace })).map(endpointToProto) };
    },

    async deleteWebhookEndpoint(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const id = endpointId(c, req.endpointId);
      c.done();
      await api.endpointDelete({ namespace, endpointId: id });
      return {};
    },

    async rotateWebhookSecret(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const id = endpointId(c, req.endpointId);
      const seconds = Number(req.overlapSeconds);
      if (seconds > 30 * 86_400) c.fail('overlap_seconds', 'must be at most 2592000 (30 days)');
      c.done();
      const overlapMs = seconds === 0 ? DEFAULT_ROTATION_OVERLAP_MS : Math.max(0, seconds * 1000);
      const r = await api.secretRotate({ namespace, endpointId: id, overlapMs });
      return { endpoint: endpointToProto(r.endpoint), secret: r.secret };
    },

    async listWebhookDeliveries(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const endpoint = req.endpointId === '' ? undefined : endpointId(c, req.endpointId);
      const runId = c.runId('run_id', req.runId, { required: false });
      const state = req.state === ProtoState.UNSPECIFIED ? undefined : STATES[req.state];
      if (req.state !== ProtoState.UNSPECIFIED && state === undefined) c.fail('state', `unknown state value ${req.state}`);
      const pageSize = c.pageSize('page_size', req.pageSize, DELIVERY_PAGE);
      c.done();
      const page = await api.deliveryList({ namespace, endpointId: endpoint, state, runId: runId || undefined, pageSize, pageToken: req.pageToken });
      return { deliveries: page.deliveries.map(deliveryToProto), nextPageToken: page.nextPageToken };
    },

    async redeliverWebhook(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      if (!DELIVERY_ID.test(req.deliveryId)) c.fail('delivery_id', req.deliveryId === '' ? 'is required' : 'must be a delivery id as ListWebhookDeliveries returns it');
      c.done();
      return { delivery: deliveryToProto(await api.redeliver({ namespace, deliveryId: req.deliveryId })) };
    },
  };
}

export function endpointToProto(e: WebhookEndpoint): ProtoEndpoint {
  return create(WebhookEndpointSchema, {
    id: e.id, namespace: e.namespace, url: e.url, events: e.events, description: e.description, createTime: timestampFromDate(e.createdAt),
    signingSecrets: e.secrets.filter((s) => s.expiresAt === null || s.expiresAt.getTime() > Date.now()).length,
  });
}

const PROTO_STATES: Record<WebhookDeliveryState, ProtoState> = { pending: ProtoState.PENDING, delivered: ProtoState.DELIVERED, dead: ProtoState.DEAD };

export function deliveryToProto(d: WebhookDelivery): ProtoDelivery {
  return create(WebhookDeliverySchema, {
    id: d.id, webhookId: d.messageId, endpointId: d.endpointId, eventType: d.eventType, runId: d.runId, state: PROTO_STATES[d.state],
    attempts: d.attempts, nextAttemptTime: timestampFromDate(d.nextAttemptAt), lastError: d.lastError ?? '', lastStatus: d.lastStatus ?? 0,
    createTime: timestampFromDate(d.createdAt), ...(d.deliveredAt ? { deliverTime: timestampFromDate(d.deliveredAt) } : {}),
    payload: d.payload as JsonObject,
  });
}

export function webhookService(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  return withErrorMapping(WebhookService, webhookServiceImpl(deps), deps.logger);
}

export function registerWebhookService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof WebhookService>> = {}): void {
  router.service(WebhookService, { ...unimplemented(WebhookService), ...impl });
}
