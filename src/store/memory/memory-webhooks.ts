import { randomUUID } from 'node:crypto';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Run } from '../../journal/run.js';
import { WebhookDeliveryNotFoundError, WebhookDeliveryPendingError, WebhookEndpointNotFoundError } from '../../journal/webhook-errors.js';
import type {
  WebhookClaim, WebhookDelivery, WebhookDeliveryClaimParams, WebhookDeliveryCompleteParams, WebhookDeliveryListParams,
  WebhookDeliveryListResult, WebhookDeliveryRedeliverParams, WebhookEndpoint, WebhookEndpointCreateParams,
  WebhookEndpointDeleteParams, WebhookEndpointListParams, WebhookEndpointRotateParams, WebhookSecret,
} from '../webhook-params.js';

/*
 * The memory store's webhook endpoints and outbox (store.ts documents each method). The store
 * calls `runFinished` from the same synchronous step that sets a terminal status, and
 * `approvalsPending` from the one that sets SUSPENDED, which is this store's transaction.
 */

interface DeliveryRecord {
  delivery: WebhookDelivery;
  claimedUntil: number | null;
  claimToken: string | null;
}

export class MemoryWebhooks {
  private readonly endpoints = new Map<string, WebhookEndpoint>();
  private readonly deliveries = new Map<string, DeliveryRecord>();

  constructor(private readonly now: () => Date) {}

  /** Retention: whether a delivery of the run is still pending (its run is kept until it is not). */
  pendingFor(runId: string): boolean {
    return [...this.deliveries.values()].some(({ delivery }) => delivery.runId === runId && delivery.state === 'pending');
  }

  /** Retention: drops the run's deliveries with it. */
  forgetRun(runId: string): void {
    for (const [id, { delivery }] of this.deliveries) if (delivery.runId === runId) this.deliveries.delete(id);
  }

  /** The outbox rows of a run that just ended, its status entry `entry`. */
  runFinished(run: Run, entry: JournalEntry): void {
    const now = this.now();
    const payload: Json = {
      type: 'run.finished', timestamp: now.toISOString(),
      data: {
        runId: run.id, namespace: run.namespace, workflow: run.workflowName, workflowVersion: run.workflowVersion,
        status: run.status, output: structuredClone(run.output), error: structuredClone(run.error) as Json,
      },
    };
    for (const ep of this.endpoints.values()) {
      if (ep.namespace !== run.namespace || !ep.events.includes('run.finished')) continue;
      const delivery: WebhookDelivery = {
        id: `whd_${randomUUID().replace(/-/g, '')}`, messageId: `msg_${run.id}_${entry.seq}`, endpointId: ep.id, namespace: run.namespace,
        eventType: 'run.finished', runId: run.id, payload: structuredClone(payload), state: 'pending', attempts: 0, nextAttemptAt: now,
        lastError: null, lastStatus: null, createdAt: now, deliveredAt: null,
      };
      this.deliveries.set(delivery.id, { delivery, claimedUntil: null, claimToken: null });
    }
  }

  /**
   * The outbox rows of a run that just parked: one per open approval and subscribed endpoint, never
   * twice for one approval and endpoint (the Postgres store's unique message id per endpoint).
   */
  approvalsPending(run: Run, approvals: readonly JournalEntry[]): void {
    const now = this.now();
    for (const a of approvals) {
      const messageId = `msg_${run.id}_approval_${a.seq}`;
      const p = (a.payload ?? {}) as { title?: unknown; description?: unknown; deadlineAt?: unknown };
      const payload: Json = {
        type: 'approval.pending', timestamp: now.toISOString(),
        data: {
          approvalId: `${run.id}:${a.seq}`, runId: run.id, namespace: run.namespace, workflow: run.workflowName, workflowVersion: run.workflowVersion,
          name: a.name, title: typeof p.title === 'string' ? p.title : a.name, description: (p.description ?? null) as Json,
          deadline: (p.deadlineAt ?? null) as Json,
        },
      };
      for (const ep of this.endpoints.values()) {
        if (ep.namespace !== run.namespace || !ep.events.includes('approval.pending')) continue;
        if ([...this.deliveries.values()].some((r) => r.delivery.endpointId === ep.id && r.delivery.messageId === messageId)) continue;
        const delivery: WebhookDelivery = {
          id: `whd_${randomUUID().replace(/-/g, '')}`, messageId, endpointId: ep.id, namespace: run.namespace,
          eventType: 'approval.pending', runId: run.id, payload: structuredClone(payload), state: 'pending', attempts: 0, nextAttemptAt: now,
          lastError: null, lastStatus: null, createdAt: now, deliveredAt: null,
        };
        this.deliveries.set(delivery.id, { delivery, claimedUntil: null, claimToken: null });
      }
    }
  }

  async webhookEndpointCreate(p: WebhookEndpointCreateParams): Promise<WebhookEndpoint> {
    const now = this.now();
    const ep: WebhookEndpoint = {
      id: p.id, namespace: p.namespace, url: p.url, events: [...p.events], secrets: [{ secret: p.secret, expiresAt: null }],
      description: p.description, createdAt: now, updatedAt: now,
    };
    this.endpoints.set(ep.id, ep);
    return structuredClone(ep);
  }

  async webhookEndpointList(p: WebhookEndpointListParams): Promise<WebhookEndpoint[]> {
    return [...this.endpoints.values()].filter((e) => e.namespace === p.namespace)
      .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1)).map((e) => structuredClone(e));
  }

  async webhookEndpointDelete(p: WebhookEndpointDeleteParams): Promise<void> {
    this.endpoint(p.namespace, p.endpointId);
    this.endpoints.delete(p.endpointId);
    for (const [id, rec] of this.deliveries) if (rec.delivery.endpointId === p.endpointId) this.deliveries.delete(id);
  }

  async webhookEndpointRotate(p: WebhookEndpointRotateParams): Promise<WebhookEndpoint> {
    const ep = this.endpoint(p.namespace, p.endpointId);
    const now = this.now();
    const until = new Date(now.getTime() + p.overlapMs);
    const kept = p.overlapMs > 0
      ? ep.secrets.filter((s) => signs(s, now.getTime()))
        .map((s) => ({ secret: s.secret, expiresAt: s.expiresAt !== null && s.expiresAt < until ? s.expiresAt : until }))
      : [];
    ep.secrets = [{ secret: p.secret, expiresAt: null }, ...kept];
    ep.updatedAt = now;
    return structuredClone(ep);
  }

  async webhookDeliveryClaim(p: WebhookDeliveryClaimParams): Promise<WebhookClaim[]> {
    const now = this.now().getTime();
    const due = [...this.deliveries.values()]
      .filter((r) => r.delivery.state === 'pending' && r.delivery.nextAttemptAt.getTime() <= now && (r.claimedUntil === null || r.claimedUntil < now))
      .sort((a, b) => a.delivery.nextAttemptAt.getTime() - b.delivery.nextAttemptAt.getTime())
      .slice(0, Math.max(0, p.limit));
    return due.map((r) => {
      r.claimedUntil = now + p.claimTtlMs;
      r.claimToken = p.claimToken;
      r.delivery.attempts += 1;
      const ep = this.endpoints.get(r.delivery.endpointId)!;
      const secrets = ep.secrets.filter((s) => signs(s, now)).map((s) => s.secret);
      return { delivery: structuredClone(r.delivery), claimToken: p.claimToken, url: ep.url, secrets };
    });
  }

  async webhookDeliveryComplete(p: WebhookDeliveryCompleteParams): Promise<boolean> {
    const rec = this.deliveries.get(p.deliveryId);
    if (!rec || rec.claimToken !== p.claimToken) return false;
    const o = p.outcome;
    const d = rec.delivery;
    rec.claimToken = null;
    rec.claimedUntil = null;
    d.state = o.state;
    d.lastStatus = o.status;
    d.lastError = o.state === 'delivered' ? null : o.error;
    if (o.state === 'pending') d.nextAttemptAt = new Date(this.now().getTime() + o.retryInMs);
    d.deliveredAt = o.state === 'delivered' ? this.now() : null;
    return true;
  }

  async webhookDeliveryList(p: WebhookDeliveryListParams): Promise<WebhookDeliveryListResult> {
    const after = p.after;
    const deliveries = [...this.deliveries.values()].map((r) => r.delivery)
      .filter((d) => d.namespace === p.namespace && (p.endpointId === undefined || d.endpointId === p.endpointId)
        && (p.state === undefined || d.state === p.state) && (p.runId === undefined || d.runId === p.runId))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
      .filter((d) => !after || d.createdAt.getTime() < after.createdAt.getTime() || (d.createdAt.getTime() === after.createdAt.getTime() && d.id < after.id))
      .slice(0, p.limit)
      .map((d) => structuredClone(d));
    const last = deliveries.at(-1);
    return { deliveries, next: deliveries.length === p.limit && last ? { createdAt: last.createdAt, id: last.id } : null };
  }

  async webhookDeliveryRedeliver(p: WebhookDeliveryRedeliverParams): Promise<WebhookDelivery> {
    const rec = this.deliveries.get(p.deliveryId);
    if (!rec || rec.delivery.namespace !== p.namespace) throw new WebhookDeliveryNotFoundError(p.deliveryId);
    if (rec.delivery.state === 'pending') throw new WebhookDeliveryPendingError(p.deliveryId);
    Object.assign(rec.delivery, { state: 'pending', attempts: 0, nextAttemptAt: this.now(), deliveredAt: null });
    rec.claimToken = null;
    rec.claimedUntil = null;
    return structuredClone(rec.delivery);
  }

  private endpoint(namespace: string, id: string): WebhookEndpoint {
    const ep = this.endpoints.get(id);
    if (!ep || ep.namespace !== namespace) throw new WebhookEndpointNotFoundError(id);
    return ep;
  }
}

/** Whether a secret is unexpired at `now` (ms), and so signs. */
function signs(s: WebhookSecret, now: number): boolean {
  return s.expiresAt === null || s.expiresAt.getTime() > now;
}
