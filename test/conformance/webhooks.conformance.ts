import { expect, it } from 'vitest';
import { WebhookDeliveryNotFoundError, WebhookDeliveryPendingError, WebhookEndpointNotFoundError } from '../../src/journal/webhook-errors.js';
import type { JournalStore, WebhookEndpointCreateParams } from '../../src/store/store.js';
import { resolution, startRun, suspension, TTL } from './harness.js';
import type { SuiteContext } from './journal-store.conformance.js';

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted', reason: 'interrupted' };

let endpoints = 0;
function endpoint(store: JournalStore, overrides: Partial<WebhookEndpointCreateParams> = {}) {
  endpoints += 1;
  return store.webhookEndpointCreate({
    id: `ep_${endpoints}_${Math.random().toString(36).slice(2)}`, namespace: 'default', url: 'https://example.test/hook',
    events: ['run.finished'], secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', description: '', ...overrides,
  });
}

const CLAIM = { limit: 10, claimTtlMs: 30_000 };

export function webhooksSection({ h }: SuiteContext): void {
  it('outbox: a terminal status writes one pending run.finished per subscribed endpoint of the namespace, in the same step', async () => {
    const { store } = h();
    const a = await endpoint(store);
    const b = await endpoint(store, { url: 'https://other.test/x' });
    await endpoint(store, { namespace: 'other' });
    const { run, lease } = await startRun(store);
    await store.runStatusSet({ lease: { ...lease }, status: 'SUSPENDED' });
    expect((await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries).toEqual([]);
    const [again] = await store.runClaim({ holder: 'w', ttlMs: TTL, limit: 1 });
    expect(again).toBeUndefined(); // SUSPENDED is not claimable: resume it by lease instead
    const resumed = await store.runLeaseAcquire({ runId: run.id, holder: 'w', ttlMs: TTL, statuses: ['SUSPENDED'] });
    const { entry } = await store.runStatusSet({ lease: resumed!, status: 'SUCCEEDED', output: { refunded: true } });

    const { deliveries } = await store.webhookDeliveryList({ namespace: 'default', limit: 10 });
    expect(deliveries.map((d) => d.endpointId).sort()).toEqual([a.id, b.id].sort());
    expect(new Set(deliveries.map((d) => d.messageId))).toEqual(new Set([`msg_${run.id}_${entry.seq}`]));
    for (const d of deliveries) {
      expect(d).toMatchObject({ state: 'pending', attempts: 0, eventType: 'run.finished', runId: run.id, lastError: null, deliveredAt: null });
      expect(d.payload).toMatchObject({
        type: 'run.finished',
        data: { runId: run.id, namespace: 'default', workflow: 'refund', workflowVersion: '1', status: 'SUCCEEDED', output: { refunded: true }, error: null },
      });
      expect(Date.parse((d.payload as { timestamp: string }).timestamp)).not.toBeNaN();
    }
    expect((await store.webhookDeliveryList({ namespace: 'other', limit: 10 })).deliveries).toEqual([]);
  });

  it('outbox: parking writes one approval.pending per open approval and subscribed endpoint, in the same step, once per approval however often the run parks', async () => {
    const { store } = h();
    const ep = await endpoint(store, { events: ['approval.pending'] });
    await endpoint(store, { url: 'https://finished-only.test/x' }); // run.finished only
    await endpoint(store, { namespace: 'other', events: ['approval.pending', 'run.finished'] });
    const { run, lease } = await startRun(store);
    const approvalPayload = { key: 'refund', title: 'Refund $5?', description: 'order o-1', deadlineAt: '2026-12-02T00:00:00.000Z', schema: {}, schemaHash: 'h', onTimeout: null };
    const [refund, second, signal] = await store.journalAppend({
      lease, entries: [suspension('refund', { payload: approvalPayload }), suspension('second'), suspension('go', { kind: 'signal' })],
    });
    const pending = async () => (await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries;
    expect(await pending()).toEqual([]); // waits appended, the run not parked yet
    await store.runStatusSet({ lease, status: 'SUSPENDED' });

    const parked = await pending();
    expect(parked.map((d) => d.messageId).sort()).toEqual([`msg_${run.id}_approval_${refund!.seq}`, `msg_${run.id}_approval_${second!.seq}`].sort());
    expect(parked.map((d) => [d.endpointId, d.eventType, d.state, d.runId])).toEqual(parked.map(() => [ep.id, 'approval.pending', 'pending', run.id]));
    const refundDelivery = parked.find((d) => d.messageId.endsWith(`_${refund!.seq}`))!;
    expect(refundDelivery.payload).toMatchObject({
      type: 'approval.pending',
      data: {
        approvalId: `${run.id}:${refund!.seq}`, runId: run.id, namespace: 'default', workflow: 'refund', workflowVersion: '1', name: 'refund',
        title: 'Refund $5?', description: 'order o-1', deadline: '2026-12-02T00:00:00.000Z',
      },
    });
    expect(Date.parse((refundDelivery.payload as { timestamp: string }).timestamp)).not.toBeNaN();
    expect(signal!.kind).toBe('signal'); // a signal wait is no approval: no delivery for it

    // Decided: "second" is closed. Resumed and parked again on the still-open "refund": nothing new.
    await store.journalResolve({ runId: run.id, suspensionSeq: second!.seq, entry: resolution({ approved: true }) });
    const resumed = await store.runLeaseAcquire({ runId: run.id, holder: 'w', ttlMs: TTL, statuses: ['SUSPENDED', 'PENDING'] });
    await store.runStatusSet({ lease: resumed!, status: 'SUSPENDED' });
    expect((await pending()).map((d) => d.id).sort()).toEqual(parked.map((d) => d.id).sort());
    // A new approval after the resume gets its own.
    const again = await store.runLeaseAcquire({ runId: run.id, holder: 'w', ttlMs: TTL, statuses: ['SUSPENDED', 'PENDING'] });
    const [third] = await store.journalAppend({ lease: again!, entries: [suspension('third')] });
    await store.runStatusSet({ lease: again!, status: 'SUSPENDED' });
    expect((await pending()).map((d) => d.messageId)).toContain(`msg_${run.id}_approval_${third!.seq}`);
    expect(await pending()).toHaveLength(3);
    expect((await store.webhookDeliveryList({ namespace: 'other', limit: 10 })).deliveries).toEqual([]);
  });

  it('outbox: a fenced SUSPENDED writes no approval.pending', async () => {
    const { store } = h();
    await endpoint(store, { events: ['approval.pending'] });
    const { run, lease } = await startRun(store);
    await store.journalAppend({ lease, entries: [suspension('refund')] });
    await store.runStatusForce({ runId: run.id, status: 'PENDING' }); // fences the holder
    await expect(store.runStatusSet({ lease, status: 'SUSPENDED' })).rejects.toThrow();
    expect((await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries).toEqual([]);
  });

  it('outbox: a forced cancel and a sweeper failure write their run.finished too; a fenced status change writes nothing', async () => {
    const { store, advance } = h();
    await endpoint(store);
    const cancelled = await startRun(store);
    await store.runStatusForce({ runId: cancelled.run.id, status: 'CANCELLED', error: { name: 'Cancelled', message: 'by test' } });
    const failed = await startRun(store, { leaseFor: { holder: 'w', ttlMs: 1_000 } });
    await advance(60_000);
    await store.runRecoverExpired({ limit: 10, maxRecoveries: 0, graceMs: 0, failError: INTERRUPTED });
    // The cancelled run's old holder is fenced: its SUCCEEDED lands nowhere, and adds no delivery.
    await expect(store.runStatusSet({ lease: cancelled.lease, status: 'SUCCEEDED' })).rejects.toThrow();
    const { deliveries } = await store.webhookDeliveryList({ namespace: 'default', limit: 10 });
    const byRun = new Map(deliveries.map((d) => [d.runId, (d.payload as { data: { status: string } }).data.status]));
    expect(byRun).toEqual(new Map([[cancelled.run.id, 'CANCELLED'], [failed.run.id, 'FAILED']]));
  });

  it('claims: an attempt is counted at claim time, one claimer at a time, a lapsed claim goes to the next claimer and fences the first', async () => {
    const { store, advance } = h();
    const ep = await endpoint(store);
    const { lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'SUCCEEDED', output: 1 });
    const [first, ...more] = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'one' });
    expect(more).toEqual([]);
    expect(first).toMatchObject({ claimToken: 'one', url: ep.url, secrets: [ep.secrets[0]!.secret], delivery: { attempts: 1, state: 'pending' } });
    expect(await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'two' })).toEqual([]);
    await advance(CLAIM.claimTtlMs + 1);
    const [second] = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'two' });
    expect(second?.delivery).toMatchObject({ id: first!.delivery.id, attempts: 2 });
    const fail = { state: 'pending' as const, retryInMs: 10_000, error: 'HTTP 500', status: 500 };
    expect(await store.webhookDeliveryComplete({ deliveryId: first!.delivery.id, claimToken: 'one', outcome: fail })).toBe(false);
    expect(await store.webhookDeliveryComplete({ deliveryId: first!.delivery.id, claimToken: 'two', outcome: fail })).toBe(true);
    // Not due before its retry delay.
    expect(await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'three' })).toEqual([]);
    await advance(10_001);
    const [third] = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'three' });
    expect(third?.delivery).toMatchObject({ attempts: 3, lastError: 'HTTP 500', lastStatus: 500 });
    expect(await store.webhookDeliveryComplete({ deliveryId: third!.delivery.id, claimToken: 'three', outcome: { state: 'delivered', status: 204 } })).toBe(true);
    const [done] = (await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries;
    expect(done).toMatchObject({ state: 'delivered', attempts: 3, lastStatus: 204, lastError: null });
    expect(done!.deliveredAt).toBeInstanceOf(Date);
    expect(await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'four' })).toEqual([]);
  });

  it('claims: concurrent claimers never hold one delivery, and each takes at most `limit`', async () => {
    const { store } = h();
    await endpoint(store);
    for (let i = 0; i < 12; i++) {
      const { lease } = await startRun(store);
      await store.runStatusSet({ lease, status: 'SUCCEEDED' });
    }
    const claims = await Promise.all(['a', 'b', 'c', 'd'].map((t) => store.webhookDeliveryClaim({ limit: 4, claimTtlMs: 30_000, claimToken: t })));
    for (const c of claims) expect(c.length).toBeLessThanOrEqual(4);
    const ids = claims.flat().map((c) => c.delivery.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(12);
  });

  it('dead letters stay listed; redelivery makes them pending with fresh attempts and the same message id', async () => {
    const { store } = h();
    const ep = await endpoint(store);
    const other = await endpoint(store);
    const { run, lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'FAILED', error: { name: 'Boom', message: 'boom' } });
    const claims = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 't' });
    const mine = claims.find((c) => c.delivery.endpointId === ep.id)!;
    await store.webhookDeliveryComplete({ deliveryId: mine.delivery.id, claimToken: 't', outcome: { state: 'dead', error: 'HTTP 410', status: 410 } });
    const dead = await store.webhookDeliveryList({ namespace: 'default', state: 'dead', limit: 10 });
    expect(dead.deliveries).toEqual([expect.objectContaining({ id: mine.delivery.id, state: 'dead', lastError: 'HTTP 410' })]);
    expect((await store.webhookDeliveryList({ namespace: 'default', endpointId: other.id, limit: 10 })).deliveries).toHaveLength(1);
    expect((await store.webhookDeliveryList({ namespace: 'default', runId: run.id, limit: 1 })).next).not.toBeNull();

    const again = await store.webhookDeliveryRedeliver({ namespace: 'default', deliveryId: mine.delivery.id });
    expect(again).toMatchObject({ state: 'pending', attempts: 0, messageId: mine.delivery.messageId });
    const [retried] = (await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'u' })).filter((c) => c.delivery.id === mine.delivery.id);
    expect(retried?.delivery.attempts).toBe(1);
    await expect(store.webhookDeliveryRedeliver({ namespace: 'default', deliveryId: mine.delivery.id })).rejects.toBeInstanceOf(WebhookDeliveryPendingError);
    await expect(store.webhookDeliveryRedeliver({ namespace: 'other', deliveryId: mine.delivery.id })).rejects.toBeInstanceOf(WebhookDeliveryNotFoundError);
  });

  it('pages deliveries newest first', async () => {
    const { store, advance } = h();
    await endpoint(store);
    for (let i = 0; i < 5; i++) {
      const { lease } = await startRun(store);
      await store.runStatusSet({ lease, status: 'SUCCEEDED' });
      await advance(1_000);
    }
    const seen: string[] = [];
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      const page = await store.webhookDeliveryList({ namespace: 'default', limit: 2, after });
      seen.push(...page.deliveries.map((d) => d.id));
      if (!page.next) break;
      after = page.next;
    }
    const all = (await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries;
    expect(seen).toEqual(all.map((d) => d.id));
    expect(all).toHaveLength(5);
    const times = all.map((d) => d.createdAt.getTime());
    expect([...times].sort((x, y) => y - x)).toEqual(times);
  });

  it('rotation: old and new secrets both sign during the overlap, then only the new one; endpoints stay in their namespace', async () => {
    const { store, advance } = h();
    const ep = await endpoint(store);
    const rotated = await store.webhookEndpointRotate({ namespace: 'default', endpointId: ep.id, secret: 'whsec_bmV3', overlapMs: 60_000 });
    expect(rotated.secrets.map((s) => s.secret)).toEqual(['whsec_bmV3', ep.secrets[0]!.secret]);
    expect(rotated.secrets[0]!.expiresAt).toBeNull();
    expect(rotated.secrets[1]!.expiresAt).toBeInstanceOf(Date);
    const { lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'SUCCEEDED' });
    const [during] = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'a' });
    expect(during!.secrets).toEqual(['whsec_bmV3', ep.secrets[0]!.secret]);
    await store.webhookDeliveryComplete({ deliveryId: during!.delivery.id, claimToken: 'a', outcome: { state: 'pending', retryInMs: 0, error: 'x', status: null } });
    await advance(60_001);
    const [after] = await store.webhookDeliveryClaim({ ...CLAIM, claimToken: 'b' });
    expect(after!.secrets).toEqual(['whsec_bmV3']);
    const third = await store.webhookEndpointRotate({ namespace: 'default', endpointId: ep.id, secret: 'whsec_dGhpcmQ', overlapMs: 0 });
    expect(third.secrets.map((s) => s.secret)).toEqual(['whsec_dGhpcmQ']);
    await expect(store.webhookEndpointRotate({ namespace: 'other', endpointId: ep.id, secret: 'whsec_eA', overlapMs: 0 })).rejects.toBeInstanceOf(WebhookEndpointNotFoundError);
  });

  it('endpoints: listed per namespace oldest first; deleting one removes its deliveries; another namespace cannot delete it', async () => {
    const { store, advance } = h();
    const a = await endpoint(store);
    await advance(1_000);
    const b = await endpoint(store);
    await endpoint(store, { namespace: 'other' });
    expect((await store.webhookEndpointList({ namespace: 'default' })).map((e) => e.id)).toEqual([a.id, b.id]);
    const { lease } = await startRun(store);
    await store.runStatusSet({ lease, status: 'SUCCEEDED' });
    await expect(store.webhookEndpointDelete({ namespace: 'other', endpointId: a.id })).rejects.toBeInstanceOf(WebhookEndpointNotFoundError);
    await store.webhookEndpointDelete({ namespace: 'default', endpointId: a.id });
    await expect(store.webhookEndpointDelete({ namespace: 'default', endpointId: a.id })).rejects.toBeInstanceOf(WebhookEndpointNotFoundError);
    expect((await store.webhookEndpointList({ namespace: 'default' })).map((e) => e.id)).toEqual([b.id]);
    expect((await store.webhookDeliveryList({ namespace: 'default', limit: 10 })).deliveries.map((d) => d.endpointId)).toEqual([b.id]);
  });
}
