import path from 'node:path';
import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { WebhookDeliveryState, WebhookService } from '../../src/gen/waymark/v1/webhook_service_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { startReceiver, type Receiver } from './receiver.js';

/*
 * run.finished webhooks end to end, with real `waymark server` processes on a real PostgreSQL and
 * a receiver that verifies every request with the standardwebhooks package. The runs finish and
 * their deliveries commit on server A, which is SIGKILLed before it delivers any; server B takes
 * the deliveries over and is SIGKILLed in the middle of its first attempt; server C finishes the
 * job. The receiver fails the first two attempts of every webhook. Each run's run.finished must
 * reach it under exactly one webhook-id, verified, and be accepted once. An endpoint subscribed
 * to approval.pending gets one per approval a run parks on, committed with the park, across a
 * SIGKILL before delivery and a failed first attempt, and the run.finished after the decision.
 */

const WORKFLOWS = path.resolve('test/webhooks/workflows.ts');

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase('waymark_webhooks');
});
afterAll(async () => {
  await db?.drop();
});

/** Fast retries for the test; private targets allowed because the receiver is on loopback. */
const FAST = {
  WAYMARK_WEBHOOK_ALLOW_PRIVATE: 'true', WAYMARK_WEBHOOK_BACKOFF_MS: '50', WAYMARK_WEBHOOK_MAX_BACKOFF_MS: '200',
  WAYMARK_WEBHOOK_TIMEOUT_MS: '1000', WAYMARK_WEBHOOK_CLAIM_TTL_MS: '1500', WAYMARK_WEBHOOK_INTERVAL_MS: '100',
};

function server(env: Record<string, string> = {}): WaymarkProcess {
  return WaymarkProcess.start(['server', '--workflows', WORKFLOWS], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', ...FAST, ...env } });
}

function clients(address: string): { runs: Client<typeof RunService>; hooks: Client<typeof WebhookService> } {
  const transport = createGrpcTransport({ baseUrl: `http://${address}` });
  return { runs: createClient(RunService, transport), hooks: createClient(WebhookService, transport) };
}

describe('run.finished webhooks from a transactional outbox', () => {
  let receiver: Receiver | undefined;
  const processes: WaymarkProcess[] = [];
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    await receiver?.close();
  });

  it('reach a verifying receiver once per run (by webhook-id) across two SIGKILLs and two failed attempts each', { timeout: 120_000 }, async () => {
    let killDuringAttempt: WaymarkProcess | undefined;
    receiver = await startReceiver((r) => {
      if (killDuringAttempt) {
        // SIGKILL the dispatching server while its attempt waits for this answer.
        killDuringAttempt.child.kill('SIGKILL');
        killDuringAttempt = undefined;
        return 'hang';
      }
      return r.attempt <= 2 ? 500 : 204;
    });

    // A: its dispatcher's first look is an hour away, so the outbox rows the runs commit stay
    // undelivered until A is killed.
    const a = server({ WAYMARK_WEBHOOK_INTERVAL_MS: '3600000' });
    processes.push(a);
    const { runs, hooks } = clients(await a.listening());
    const created = await hooks.createWebhookEndpoint({ url: receiver.url, description: 'e2e' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(created.endpoint?.events).toEqual(['run.finished']);
    receiver.secrets.push(created.secret);
    const runIds: string[] = [];
    for (let n = 1; n <= 3; n++) {
      const { run } = await runs.startRun({ workflow: 'finish', input: fromJson(ValueSchema, { n }), wait: true });
      expect(run?.status).toBe(RunStatus.SUCCEEDED);
      runIds.push(run!.id);
    }
    const pending = await hooks.listWebhookDeliveries({});
    expect(pending.deliveries.map((d) => [d.runId, d.state])).toEqual(expect.arrayContaining(runIds.map((id) => [id, WebhookDeliveryState.PENDING])));
    expect(receiver.received).toEqual([]);
    a.child.kill('SIGKILL');
    await a.exited;

    // B: delivers, and dies in the middle of its first attempt.
    const b = server();
    processes.push(b);
    killDuringAttempt = b;
    await b.listening();
    await b.exited;
    // B claimed the batch; the first request it sent was left unanswered when B died (others of
    // the batch may have reached the receiver too, and been failed by it).
    expect(receiver.received.length).toBeGreaterThanOrEqual(1);
    expect(runIds).toContain(receiver.received[0]!.body?.data.runId);

    // C: takes over once B's claim lapses; the receiver fails every webhook's first two attempts.
    const c = server();
    processes.push(c);
    const fromC = clients(await c.listening());
    await until('every run.finished to be accepted', () => (new Set(receiver!.accepted).size >= 3 ? true : undefined), 60_000);
    const delivered = await until('every delivery to be DELIVERED', async () => {
      const page = await fromC.hooks.listWebhookDeliveries({});
      return page.deliveries.length === 3 && page.deliveries.every((d) => d.state === WebhookDeliveryState.DELIVERED) ? page.deliveries : undefined;
    });
    await c.stop();

    expect(receiver.received.every((r) => r.verified), 'every request verifies with standardwebhooks').toBe(true);
    for (const runId of runIds) {
      const forRun = receiver.received.filter((r) => r.body?.data.runId === runId);
      const ids = new Set(forRun.map((r) => r.id));
      expect(ids.size, `run ${runId} arrived under one webhook-id`).toBe(1);
      const [id] = ids;
      expect(receiver.accepted.filter((x) => x === id), `run ${runId} was accepted once`).toHaveLength(1);
      expect(forRun.map((r) => r.attempt)).toEqual([1, 2, 3]);
      expect(forRun[0]!.body).toMatchObject({ type: 'run.finished', data: { runId, status: 'SUCCEEDED', workflow: 'finish', namespace: 'default' } });
      const row = delivered.find((d) => d.runId === runId)!;
      expect(row).toMatchObject({ webhookId: id, lastStatus: 204, lastError: '' });
      // Attempts count at claim time: one B claimed but was killed before sending is counted too.
      expect(row.attempts).toBeGreaterThanOrEqual(forRun.length);
      expect(row.attempts).toBeLessThanOrEqual(forRun.length + 1);
    }
    expect(receiver.accepted).toHaveLength(3);
  });
});

describe('approval.pending webhooks', () => {
  it('reach a verifying receiver once per approval (by webhook-id) across a SIGKILL between the park and delivery; the decision then brings run.finished', { timeout: 120_000 }, async () => {
    const receiver = await startReceiver((r) => (r.attempt <= 1 ? 503 : 204));
    const processes: WaymarkProcess[] = [];
    try {
      // A: parks the runs (the deliveries commit with the park) and never dispatches before its SIGKILL.
      const a = server({ WAYMARK_WEBHOOK_INTERVAL_MS: '3600000' });
      processes.push(a);
      const fromA = clients(await a.listening());
      const created = await fromA.hooks.createWebhookEndpoint({ url: receiver.url, events: ['approval.pending', 'run.finished'], description: 'approvals' });
      expect(created.endpoint?.events).toEqual(['approval.pending', 'run.finished']);
      receiver.secrets.push(created.secret);
      const parked: Array<{ runId: string; approvalId: string }> = [];
      for (let n = 1; n <= 2; n++) {
        const { run, waitingOn } = await fromA.runs.startRun({ workflow: 'gated', input: fromJson(ValueSchema, { n }), wait: true });
        expect(run?.status).toBe(RunStatus.SUSPENDED);
        parked.push({ runId: run!.id, approvalId: waitingOn[0]!.approvalId });
      }
      const committed = await fromA.hooks.listWebhookDeliveries({ endpointId: created.endpoint!.id });
      expect(committed.deliveries.map((d) => [d.runId, d.eventType, d.state]).sort()).toEqual(
        parked.map((p) => [p.runId, 'approval.pending', WebhookDeliveryState.PENDING]).sort());
      a.child.kill('SIGKILL');
      await a.exited;

      // B: delivers them (each fails once first), then the decisions finish the runs.
      const b = server();
      processes.push(b);
      const transport = createGrpcTransport({ baseUrl: `http://${await b.listening()}` });
      const signals = createClient(SignalService, transport);
      await until('both approval.pending accepted', () => (receiver.accepted.length >= 2 ? true : undefined), 60_000);
      for (const p of parked) await signals.decideApproval({ id: p.approvalId, approve: true, by: 'ops' });
      await until('both run.finished accepted', () => (receiver.accepted.length >= 4 ? true : undefined), 60_000);
      await b.stop();

      expect(receiver.received.every((r) => r.verified), 'every request verifies with standardwebhooks').toBe(true);
      for (const p of parked) {
        const pending = receiver.received.filter((r) => r.body?.type === 'approval.pending' && r.body.data.runId === p.runId);
        expect(new Set(pending.map((r) => r.id)), `run ${p.runId}'s approval arrived under one webhook-id`).toEqual(new Set([`msg_${p.runId}_approval_${p.approvalId.split(':')[1]}`]));
        expect(pending.map((r) => r.attempt)).toEqual([1, 2]);
        expect(receiver.accepted.filter((id) => id === pending[0]!.id)).toHaveLength(1);
        expect(pending[0]!.body!.data).toMatchObject({ approvalId: p.approvalId, runId: p.runId, workflow: 'gated', namespace: 'default', title: expect.stringMatching(/^Release batch \d\?$/), description: 'the e2e gate' });
        expect(typeof pending[0]!.body!.data.deadline).toBe('string');
        const finished = receiver.received.filter((r) => r.body?.type === 'run.finished' && r.body.data.runId === p.runId);
        expect(new Set(finished.map((r) => r.id)).size).toBe(1);
        expect(finished[0]!.body!.data).toMatchObject({ status: 'SUCCEEDED', output: { approved: true } });
      }
      expect(receiver.accepted).toHaveLength(4);
    } finally {
      await Promise.all(processes.map((p) => p.stop('SIGKILL')));
      await receiver.close();
    }
  });
});

describe('webhook targets (SSRF)', () => {
  it('refuses a private IP literal at registration and a name resolving to loopback at connect time, unless allowed', { timeout: 60_000 }, async () => {
    const receiver = await startReceiver(() => 204);
    const p = server({ WAYMARK_WEBHOOK_ALLOW_PRIVATE: 'false', WAYMARK_WEBHOOK_MAX_ATTEMPTS: '2' });
    try {
      const { runs, hooks } = clients(await p.listening());
      for (const url of ['http://127.0.0.1:9/x', 'http://[::1]:9/x', 'http://[::ffff:7f00:1]/x', 'http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/x']) {
        const err = await hooks.createWebhookEndpoint({ url }).then(() => undefined, (e: unknown) => ConnectError.from(e));
        expect(err?.code, url).toBe(Code.InvalidArgument);
        expect(err?.rawMessage, url).toMatch(/url: names a (loopback|link-local|private)/);
      }
      // `localhost` is a name: accepted at registration, refused when the connection resolves it.
      const created = await hooks.createWebhookEndpoint({ url: receiver.url.replace('127.0.0.1', 'localhost') });
      receiver.secrets.push(created.secret);
      const { run } = await runs.startRun({ workflow: 'finish', input: fromJson(ValueSchema, { n: 1 }), wait: true });
      const dead = await until('the delivery to be dead-lettered', async () => {
        const page = await hooks.listWebhookDeliveries({ runId: run!.id, endpointId: created.endpoint!.id });
        return page.deliveries[0]?.state === WebhookDeliveryState.DEAD ? page.deliveries[0] : undefined;
      });
      expect(dead.attempts).toBe(2);
      expect(dead.lastStatus).toBe(0);
      expect(dead.lastError).toMatch(/refused to connect to localhost \((127\.0\.0\.1|::1)\): loopback address/);
      expect(receiver.received, 'nothing reached the loopback receiver').toEqual([]);
    } finally {
      await p.stop();
      await receiver.close();
    }
  });
});
