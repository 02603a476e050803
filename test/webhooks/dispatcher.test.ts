import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { WebhookDispatcher, type AttemptReport } from '../../src/webhooks/dispatcher.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { until } from '../support/until.js';
import { startReceiver, type Receiver } from './receiver.js';

/*
 * The dispatcher in process, on the memory store, against real HTTP receivers on loopback (so
 * private targets are allowed here; webhooks-e2e.test.ts proves refusal): dead letters, redelivery,
 * redirects not followed, a lapsed claim. Attempts are driven with dispatchOnce, never timers.
 */

const logger = pino({ level: 'silent' });
let receiver: Receiver | undefined;
afterEach(async () => {
  await receiver?.close();
  receiver = undefined;
});

async function finishedRun(store: MemoryStore, url: string, secret = newWebhookSecret()) {
  const ep = await store.webhookEndpointCreate({ id: `ep_${'a'.repeat(32)}`, namespace: 'default', url, events: ['run.finished'], secret, description: '' });
  const { run, lease } = await store.runCreate({
    namespace: 'default', workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: {}, leaseFor: { holder: 'h', ttlMs: 30_000 },
  });
  await store.runStatusSet({ lease: lease!, status: 'SUCCEEDED', output: { ok: true } });
  return { ep, run, secret };
}

function dispatcher(store: MemoryStore, config: Partial<ConstructorParameters<typeof WebhookDispatcher>[2]> = {}) {
  const d = new WebhookDispatcher(store, logger, { allowPrivate: true, backoffMs: 1, maxBackoffMs: 1, timeoutMs: 2_000, claimTtlMs: 5_000, maxAttempts: 3, ...config });
  const reports: AttemptReport[] = [];
  d.events.on('attempt', (r: AttemptReport) => reports.push(r));
  return { d, reports };
}

/** Runs looks until one attempts something (the retry delay is 1 ms of real time). */
async function attemptNext(d: WebhookDispatcher): Promise<void> {
  await until('a due delivery to attempt', async () => ((await d.dispatchOnce()) > 0 ? true : undefined), 60_000, 2);
}

describe('WebhookDispatcher', () => {
  it('with a tracer, each attempt\'s POST carries its span\'s traceparent and the span ends with the answer', async () => {
    receiver = await startReceiver((r) => (r.attempt === 1 ? 503 : 200));
    const store = new MemoryStore();
    const { run, secret } = await finishedRun(store, receiver.url);
    receiver.secrets.push(secret);
    const spans: { runId: string; attempt: number; traceparent: string; result?: { ok: boolean; status: number | null } }[] = [];
    const d = new WebhookDispatcher(store, logger, { allowPrivate: true, backoffMs: 1, maxBackoffMs: 1, timeoutMs: 2_000, claimTtlMs: 5_000 }, {
      deliveryStarted(delivery) {
        const span: (typeof spans)[number] = { runId: delivery.runId, attempt: delivery.attempts, traceparent: `00-${'c'.repeat(32)}-${String(spans.length + 1).padStart(16, '0')}-01` };
        spans.push(span);
        return { traceparent: span.traceparent, ended: ({ ok, status }) => void (span.result = { ok, status }) };
      },
    });
    await attemptNext(d);
    await attemptNext(d);
    expect(spans.map((s) => [s.runId, s.attempt, s.result])).toEqual([[run.id, 1, { ok: false, status: 503 }], [run.id, 2, { ok: true, status: 200 }]]);
    expect(receiver.received.map((r) => r.headers.traceparent)).toEqual(spans.map((s) => s.traceparent));
    expect(receiver.received.every((r) => r.verified)).toBe(true);
  });

  it('without a tracer sends no traceparent', async () => {
    receiver = await startReceiver(() => 200);
    const store = new MemoryStore();
    await finishedRun(store, receiver.url);
    const { d } = dispatcher(store);
    await attemptNext(d);
    expect(receiver.received[0]!.headers.traceparent).toBeUndefined();
  });

  it('dead-letters after maxAttempts, keeps the delivery listed, and a redelivery sends it again with the same webhook-id', async () => {
    let failing = true;
    receiver = await startReceiver(() => (failing ? 503 : 200));
    const store = new MemoryStore();
    const { secret } = await finishedRun(store, receiver.url);
    receiver.secrets.push(secret);
    const { d, reports } = dispatcher(store);
    for (let i = 0; i < 3; i++) await attemptNext(d);
    expect(reports.map((r) => r.outcome.state)).toEqual(['pending', 'pending', 'dead']);
    expect(await d.dispatchOnce()).toBe(0);
    const [dead] = (await store.webhookDeliveryList({ namespace: 'default', state: 'dead', limit: 10 })).deliveries;
    expect(dead).toMatchObject({ attempts: 3, lastStatus: 503, lastError: 'HTTP 503' });

    failing = false;
    await store.webhookDeliveryRedeliver({ namespace: 'default', deliveryId: dead!.id });
    await attemptNext(d);
    expect(reports.at(-1)?.outcome).toEqual({ state: 'delivered', status: 200 });
    expect(new Set(receiver.received.map((r) => r.id))).toEqual(new Set([dead!.messageId]));
    expect(receiver.received.every((r) => r.verified)).toBe(true);
  });

  it('does not follow a redirect: the attempt fails naming where it pointed, and the redirect target sees nothing', async () => {
    receiver = await startReceiver(() => 204);
    const bouncer = http.createServer((_req, res) => res.writeHead(307, { location: receiver!.url }).end());
    await new Promise<void>((r) => bouncer.listen(0, '127.0.0.1', r));
    try {
      const store = new MemoryStore();
      await finishedRun(store, `http://127.0.0.1:${(bouncer.address() as AddressInfo).port}/hook`);
      const { d, reports } = dispatcher(store);
      await attemptNext(d);
      expect(reports[0]?.outcome).toMatchObject({ state: 'pending', status: 307, error: `HTTP 307: redirects are not followed (to ${receiver.url})` });
      expect(receiver.received).toEqual([]);
    } finally {
      bouncer.closeAllConnections();
      await new Promise<void>((r) => bouncer.close(() => r()));
    }
  });

  it('an attempt with no answer within the timeout fails and is retried; the claim TTL must exceed the timeout', async () => {
    receiver = await startReceiver((r) => (r.attempt === 1 ? 'hang' : 204));
    const store = new MemoryStore();
    const { secret } = await finishedRun(store, receiver.url);
    receiver.secrets.push(secret);
    const { d, reports } = dispatcher(store, { timeoutMs: 200, claimTtlMs: 1_000 });
    await attemptNext(d);
    expect(reports[0]?.outcome).toMatchObject({ state: 'pending', status: null, error: 'no answer within 200 ms' });
    await attemptNext(d);
    expect(reports[1]?.outcome).toEqual({ state: 'delivered', status: 204 });
    expect(() => new WebhookDispatcher(store, logger, { timeoutMs: 1_000, claimTtlMs: 1_000 })).toThrow(/must exceed/);
  });

  it('refuses a private target at connect time unless allowed, without sending', async () => {
    receiver = await startReceiver(() => 204);
    const store = new MemoryStore();
    await finishedRun(store, receiver.url.replace('127.0.0.1', 'localhost'));
    const { d, reports } = dispatcher(store, { allowPrivate: false });
    await attemptNext(d);
    expect(reports[0]?.outcome).toMatchObject({ state: 'pending', status: null, error: expect.stringMatching(/refused to connect to localhost .*loopback address/) });
    expect(receiver.received).toEqual([]);
  });
});
