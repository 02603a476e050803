import { EventEmitter } from 'node:events';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from 'pino';
import type { JournalStore, WebhookClaim, WebhookDelivery, WebhookDeliveryOutcome } from '../store/store.js';
import { webhookHeaders } from './signing.js';
import { guardedLookup, literalRefusal } from './target-guard.js';

/*
 * The webhook dispatcher: every `waymark server` (and `waymark dev`) runs one. It claims due
 * deliveries from the store's outbox (FOR UPDATE SKIP LOCKED, so replicas share the work and
 * never hold one delivery at once; a claim lapses after `claimTtlMs`, so a delivery whose
 * dispatcher died mid-attempt goes to the next), POSTs each signed body, and records the outcome:
 * a 2xx delivers; anything else (another status, a redirect, a refused target, a timeout, a
 * connection error) schedules the next attempt after an exponential backoff with jitter, until
 * `maxAttempts`, after which the delivery is dead-lettered (kept, listed over the API,
 * redeliverable). Delivery is at least once: a crash after the receiver answered and before the
 * outcome was recorded repeats the attempt, with the same `webhook-id`, which receivers dedupe on.
 * Not on the sweeper: sending HTTP to slow receivers must not delay lease recovery, and the work
 * grows with the servers.
 */

export interface DispatcherConfig {
  /** How often to look for due deliveries when the last look found none. */
  intervalMs: number;
  /** Deliveries claimed (and attempted concurrently) per look. */
  batch: number;
  /** A claim lapses this long after it was taken; must exceed `timeoutMs`. */
  claimTtlMs: number;
  /** One attempt's deadline: connect, send, and the receiver's answer. */
  timeoutMs: number;
  /** Attempts before a delivery is dead-lettered. */
  maxAttempts: number;
  /** The wait before the second attempt; doubles with each attempt, capped at `maxBackoffMs`. */
  backoffMs: number;
  maxBackoffMs: number;
  /** Let deliveries reach private, loopback and link-local addresses (target-guard.ts). */
  allowPrivate: boolean;
}

export const DISPATCHER_DEFAULTS: DispatcherConfig = {
  intervalMs: 1_000, batch: 16, claimTtlMs: 60_000, timeoutMs: 10_000, maxAttempts: 8, backoffMs: 5_000, maxBackoffMs: 3_600_000, allowPrivate: false,
};

/** What one attempt came to, for logs and tests. */
export interface AttemptReport {
  deliveryId: string;
  messageId: string;
  attempt: number;
  outcome: WebhookDeliveryOutcome;
}

/**
 * A span per delivery attempt when the server traces (docs/tracing.md "Propagation"), in the
 * trace of the run the webhook reports; its `traceparent` is sent with the POST. The composition
 * root implements it over OpenTelemetry (src/cli/execution-tracing.ts); this module loads none.
 */
export interface WebhookTracer {
  deliveryStarted(delivery: WebhookDelivery): { traceparent: string; ended(result: { ok: boolean; status: number | null }): void };
}

/** The wait before attempt `attempt + 1`: base * 2^(attempt-1), capped, half of it jittered. */
export function backoffMs(config: Pick<DispatcherConfig, 'backoffMs' | 'maxBackoffMs'>, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(config.maxBackoffMs, config.backoffMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base / 2 + random() * (base / 2));
}

export class WebhookDispatcher {
  readonly config: DispatcherConfig;
  /** Emits 'attempt' (AttemptReport) after each recorded attempt. */
  readonly events = new EventEmitter();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = true;
  private readonly lookup: ReturnType<typeof guardedLookup>;

  constructor(
    private readonly store: JournalStore, private readonly logger: Logger, config: Partial<DispatcherConfig> = {},
    private readonly tracer: WebhookTracer | null = null,
  ) {
    this.config = { ...DISPATCHER_DEFAULTS, ...config };
    if (this.config.claimTtlMs <= this.config.timeoutMs) {
      throw new RangeError(`the webhook claim TTL (${this.config.claimTtlMs} ms) must exceed the attempt timeout (${this.config.timeoutMs} ms)`);
    }
    this.lookup = guardedLookup(this.config.allowPrivate);
  }

  /** Starts looking, the first time `intervalMs` from now. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(this.config.intervalMs);
  }

  /** Stops looking; attempts in flight finish (each is bounded by timeoutMs). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One look: claim due deliveries and attempt each. Returns how many were attempted. */
  async dispatchOnce(): Promise<number> {
    const claims = await this.store.webhookDeliveryClaim({ limit: this.config.batch, claimTtlMs: this.config.claimTtlMs, claimToken: randomUUID() });
    await Promise.all(claims.map((c) => this.attempt(c)));
    return claims.length;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.dispatchOnce()
        .then((n) => this.schedule(n >= this.config.batch ? 0 : this.config.intervalMs))
        .catch((err: unknown) => {
          this.logger.warn({ err }, 'webhook dispatch failed; trying again');
          this.schedule(this.config.intervalMs);
        });
    }, ms);
    this.timer.unref();
  }

  private async attempt(claim: WebhookClaim): Promise<void> {
    const { delivery } = claim;
    const span = this.tracer?.deliveryStarted(delivery) ?? null;
    const result = await this.post(claim, span?.traceparent ?? null);
    span?.ended(result);
    const outcome: WebhookDeliveryOutcome = result.ok
      ? { state: 'delivered', status: result.status! }
      : delivery.attempts >= this.config.maxAttempts
        ? { state: 'dead', error: result.error, status: result.status }
        : { state: 'pending', retryInMs: backoffMs(this.config, delivery.attempts), error: result.error, status: result.status };
    const recorded = await this.store.webhookDeliveryComplete({ deliveryId: delivery.id, claimToken: claim.claimToken, outcome });
    const log = { deliveryId: delivery.id, webhookId: delivery.messageId, endpointId: delivery.endpointId, attempt: delivery.attempts, state: outcome.state, status: result.status };
    if (!recorded) this.logger.warn(log, 'webhook attempt outlived its claim; another dispatcher has the delivery');
    else if (outcome.state === 'delivered') this.logger.info(log, 'webhook delivered');
    else if (outcome.state === 'dead') this.logger.warn({ ...log, error: result.error }, 'webhook dead-lettered after its last attempt');
    else this.logger.info({ ...log, error: result.error, retryInMs: outcome.retryInMs }, 'webhook attempt failed; retrying later');
    this.events.emit('attempt', { deliveryId: delivery.id, messageId: delivery.messageId, attempt: delivery.attempts, outcome } satisfies AttemptReport);
  }

  /** One POST. Never throws: every failure is a result. Redirects are not followed. */
  private post(claim: WebhookClaim, traceparent: string | null): Promise<{ ok: boolean; status: number | null; error: string }> {
    const { delivery } = claim;
    return new Promise((resolve) => {
      let url: URL;
      try {
        url = new URL(claim.url);
      } catch {
        resolve({ ok: false, status: null, error: `the endpoint URL does not parse: ${claim.url}` });
        return;
      }
      const refused = literalRefusal(url.hostname, this.config.allowPrivate);
      if (refused) {
        resolve({ ok: false, status: null, error: refused.message });
        return;
      }
      const body = JSON.stringify(delivery.payload);
      const headers = {
        'content-type': 'application/json', 'user-agent': 'waymark-webhooks',
        ...webhookHeaders({ id: delivery.messageId, timestampSeconds: Math.floor(Date.now() / 1000), body, secrets: claim.secrets }),
        ...(traceparent ? { traceparent } : {}),
      };
      const send = url.protocol === 'https:' ? https.request : http.request;
      let settled = false;
      const done = (r: { ok: boolean; status: number | null; error: string }) => {
        if (settled) return;
        settled = true;
        resolve(r);
      };
      // agent: false: a fresh connection per attempt, so every connect goes through `lookup`.
      const req = send(url, { method: 'POST', headers, agent: false, lookup: this.lookup as never, timeout: this.config.timeoutMs }, (res) => {
        const status = res.statusCode ?? 0;
        res.resume(); // the answer's body is not read: only its status counts
        res.once('end', () => {
          if (status >= 200 && status < 300) done({ ok: true, status, error: '' });
          else if (status >= 300 && status < 400) done({ ok: false, status, error: `HTTP ${status}: redirects are not followed (to ${res.headers.location ?? 'nowhere'})` });
          else done({ ok: false, status, error: `HTTP ${status}` });
        });
        res.once('error', (err) => done({ ok: false, status, error: err.message }));
      });
      const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${this.config.timeoutMs} ms`)), this.config.timeoutMs);
      req.once('timeout', () => req.destroy(new Error(`no answer within ${this.config.timeoutMs} ms`)));
      req.once('error', (err) => done({ ok: false, status: null, error: err.message }));
      req.once('close', () => clearTimeout(deadline));
      req.end(body);
    });
  }
}
