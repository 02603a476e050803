import { WaymarkError } from './errors.js';

/* Domain errors of webhook endpoints and deliveries (docs/security.md "Webhooks"). */

export class WebhookEndpointNotFoundError extends WaymarkError {
  readonly reason = 'WEBHOOK_ENDPOINT_NOT_FOUND';
  constructor(readonly endpointId: string) {
    super(`webhook endpoint ${endpointId} was not found in this namespace; ListWebhookEndpoints shows the namespace's endpoints`);
  }
}

export class WebhookDeliveryNotFoundError extends WaymarkError {
  readonly reason = 'WEBHOOK_DELIVERY_NOT_FOUND';
  constructor(readonly deliveryId: string) {
    super(`webhook delivery ${deliveryId} was not found in this namespace; ListWebhookDeliveries shows the namespace's deliveries`);
  }
}

/** A redelivery of a delivery that is still being attempted. */
export class WebhookDeliveryPendingError extends WaymarkError {
  readonly reason = 'WEBHOOK_DELIVERY_PENDING';
  constructor(readonly deliveryId: string) {
    super(`webhook delivery ${deliveryId} is still pending (its next attempt is scheduled); redeliver a delivered or dead-lettered one`);
  }
}
