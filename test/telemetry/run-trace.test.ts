import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createWaymarkWorker } from '../../clients/ts/src/index.js';
import { fakeModelEnv } from '../agent/agent-harness.js';
import { chaosEnv, Driver, kill, startSweeper } from '../chaos/support/cluster.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { FakeOpenAIServer } from '../support/fake-openai-server.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { newWebhookSecret } from '../../src/webhooks/signing.js';
import { OtlpReceiver, type ReceivedSpan } from './support/otlp-receiver.js';

/*
 * One run's trace across two replicas (docs/tracing.md, issue 35 "Must show"). Both replicas are
 * real `waymark server` processes exporting over OTLP/HTTP to a receiver in this process (the
 * in-memory exporter of the test: every span either replica exports lands in its list). The run
 * makes a model call on the fake OpenAI-compatible provider, calls a remote tool served by a
 * worker in this process, then calls the `http` tool twice on this test's server; the server holds
 * the second call while replica A is SIGKILLed, and replica B resumes the run: it replays the model
 * call, the remote call and the first http call from the journal and redispatches the held one.
 * The trace holds both replicas' execution attempts, exactly one span per effect (none for the
 * replayed ones), the traceparent the http server and the worker received, the token counts, and
 * the delivery of the run's `run.finished` webhook with the traceparent its receiver got.
 */

const FIXTURE = path.resolve('test/telemetry/fixtures/traced-workflows.ts');
const MODEL = 'compatible:fake-model';
const USAGE = { prompt: 37, completion: 11 };

interface Hit { path: string; headers: IncomingHttpHeaders }

let db: TestDatabase;
let receiver: OtlpReceiver;
let provider: FakeOpenAIServer;
let sweeper: WaymarkProcess;
let driver: Driver;
const hits: Hit[] = [];
const held: ServerResponse[] = [];
let heldArrived!: () => void;
const firstHeld = new Promise<void>((resolve) => (heldArrived = resolve));
const api = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    hits.push({ path: req.url ?? '', headers: req.headers });
    // The first /held call never gets an answer: its replica is killed while waiting.
    if (req.url === '/held' && hits.filter((h) => h.path === '/held').length === 1) {
      held.push(res);
      heldArrived();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
});
let url = '';

beforeAll(async () => {
  db = await createTestDatabase('waymark_run_trace');
  receiver = await OtlpReceiver.start();
  provider = await FakeOpenAIServer.start(() => ({ text: 'hello', usage: USAGE }));
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  sweeper = await startSweeper(chaosEnv(db.url, { WAYMARK_WORKFLOWS: FIXTURE }));
  driver = await Driver.open(db.url, FIXTURE);
}, 120_000);
afterAll(async () => {
  for (const res of held) res.destroy();
  await sweeper?.stop();
  await driver?.close();
  await new Promise<void>((resolve) => api.close(() => resolve()));
  await provider?.close();
  await receiver?.close();
  await db?.drop();
});

function replica(name: string): WaymarkProcess {
  return WaymarkProcess.start(['server'], {
    env: chaosEnv(db.url, {
      WAYMARK_WORKFLOWS: FIXTURE, ...fakeModelEnv(provider), OPENAI_API_KEY: '', ANTHROPIC_API_KEY: '',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: name, OTEL_BSP_SCHEDULE_DELAY: '50',
      WAYMARK_WEBHOOK_ALLOW_PRIVATE: 'true', WAYMARK_WEBHOOK_INTERVAL_MS: '100',
    }),
  });
}

/** `traceparent` → its span id. */
function spanIdOf(traceparent: string | string[] | undefined): string {
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(traceparent));
  expect(m, `traceparent ${String(traceparent)}`).not.toBeNull();
  return m![2]!;
}

describe('one run across two replicas, one SIGKILLed mid-run', () => {
  it('is one trace: both attempts, one span per effect and none for replayed ones, the traceparent its callees received, the token counts', { timeout: 300_000 }, async () => {
    const a = replica('replica-a');
    const addressA = await a.listening();
    const received: (string | undefined)[] = [];
    let registered!: () => void;
    const isRegistered = new Promise<void>((resolve) => (registered = resolve));
    const worker = createWaymarkWorker({
      address: addressA, workerId: 'tracing-worker', pollWaitMs: 1_000,
      log: (msg) => msg === 'registered' && registered(),
    }).tool({
      name: 'traced_remote', description: 'doubles n', input: z.object({ n: z.number() }),
      execute: ({ n }, { traceparent }) => {
        received.push(traceparent);
        return { doubled: n * 2 };
      },
    });
    const working = worker.run();
    await isRegistered;

    await driver.store.webhookEndpointCreate({ id: `ep_${'b'.repeat(32)}`, namespace: 'default', url: `${url}/webhook`, events: ['run.finished'], secret: newWebhookSecret(), description: '' });
    const runId = await driver.start('traced', { url, model: MODEL });
    const traceId = runId.replaceAll('-', '');
    const ofRun = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === traceId);
    await firstHeld;
    await worker.stop();
    await working;
    // Replica A exported what it finished (batches every 50 ms) before it dies.
    const first = hits.find((h) => h.path === '/first')!;
    await until('replica A exported its finished spans', () =>
      ofRun().some((s) => s.attributes['gen_ai.tool.call.id'] === first.headers['idempotency-key']) || undefined);
    await kill(a);
    for (const res of held) res.destroy();

    const b = replica('replica-b');
    await b.listening();
    await driver.waitEnded([runId], 120_000);
    const webhook = await until('the run.finished webhook was delivered', () => hits.find((h) => h.path === '/webhook'));
    expect((await b.stop('SIGTERM')).code).toBe(0); // a clean stop flushes its spans
    const run = await driver.store.runGet({ runId, namespace: 'default' });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ text: 'hello', remote: { doubled: 2 }, first: 200, held: 200 });

    const spans = ofRun();
    const names = JSON.stringify(spans.map((s) => `${s.service} ${s.name}`));
    // Both replicas' execution attempts are in the run's trace.
    const attempts = spans.filter((s) => s.name === 'waymark.execution');
    expect(new Set(attempts.map((s) => s.service)), names).toEqual(new Set(['replica-a', 'replica-b']));
    const attemptsOf = (service: string): ReceivedSpan[] => attempts.filter((s) => s.service === service);
    for (const s of attemptsOf('replica-a')) expect(s.attributes['waymark.holder']).toMatch(new RegExp(`:${a.child.pid}$`));
    expect(attemptsOf('replica-b').map((s) => s.attributes['waymark.outcome'])).toContain('succeeded');

    // One span per effect: the model call, the remote task and both http calls; none for B's replays.
    const effects = spans.filter((s) => s.attributes['waymark.effect.kind'] !== undefined);
    expect(effects.map((s) => `${s.service} ${s.name}`).sort(), names).toEqual([
      'replica-a chat fake-model', 'replica-a execute_tool http', 'replica-a execute_tool traced_remote', 'replica-b execute_tool http',
    ]);

    const model = effects.find((s) => s.name === 'chat fake-model')!;
    expect(model.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'compatible', 'gen_ai.request.model': 'fake-model',
      'gen_ai.usage.input_tokens': USAGE.prompt, 'gen_ai.usage.output_tokens': USAGE.completion,
    });
    const journaled = (await driver.store.journalList({ runId })).find((e) => e.kind === 'model' && e.status === 'ok')!;
    expect(journaled.usage).toMatchObject({ inputTokens: USAGE.prompt, outputTokens: USAGE.completion });

    // The worker's task span is the one whose traceparent the worker received.
    const task = effects.find((s) => s.name === 'execute_tool traced_remote')!;
    expect(task.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'traced_remote', 'waymark.tool.source': 'remote' });
    expect(received).toHaveLength(1);
    expect(spanIdOf(received[0])).toBe(task.spanId);

    // Each http span is the one whose traceparent the test's server received, with the call's key.
    const httpSpans = effects.filter((s) => s.name === 'execute_tool http');
    const heldHits = hits.filter((h) => h.path === '/held');
    expect(hits.filter((h) => h.path === '/first')).toHaveLength(1);
    expect(heldHits).toHaveLength(2);
    for (const hit of [first, heldHits[1]!]) {
      const span = httpSpans.find((s) => s.spanId === spanIdOf(hit.headers.traceparent));
      expect(span, `${hit.path} ${String(hit.headers.traceparent)} in ${names}`).toBeDefined();
      expect(span!.attributes['gen_ai.tool.call.id']).toBe(hit.headers['idempotency-key']);
      expect(String(hit.headers.traceparent).slice(3, 35)).toBe(traceId);
    }
    // The held call redispatched on B is the same attempt under the same key, so the same span id A sent.
    expect(heldHits[1]!.headers.traceparent).toBe(heldHits[0]!.headers.traceparent);
    const heldSpan = httpSpans.find((s) => s.service === 'replica-b')!;
    expect(heldSpan.attributes['waymark.effect.redispatch']).toBe(true);
    // The webhook's POST carried its delivery span, in the run's trace.
    const delivery = spans.find((s) => s.name === 'webhook run.finished');
    expect(delivery, names).toBeDefined();
    expect(spanIdOf(webhook.headers.traceparent)).toBe(delivery!.spanId);
    expect(delivery!.attributes).toMatchObject({ 'http.response.status_code': 200, 'waymark.webhook.id': webhook.headers['webhook-id'] });

    // B's attempt was the active span while it executed: its statements are spans under it (their
    // text, never their parameters) and its log lines carry run_id, trace_id and span_id.
    const attemptB = attemptsOf('replica-b').find((x) => x.attributes['waymark.outcome'] === 'succeeded')!;
    const statements = spans.filter((x) => x.parentSpanId === attemptB.spanId && (x.attributes['db.system'] === 'postgresql' || x.attributes['db.system.name'] === 'postgresql'));
    expect(statements.length, names).toBeGreaterThan(0);
    for (const x of statements) expect(JSON.stringify(x.attributes)).not.toContain(runId);
    const ended = b.logs.filter((l) => l.msg === 'execution ended' && l.run_id === runId);
    expect(ended.map((l) => l.trace_id)).toEqual(ended.map(() => traceId));
    expect(ended.map((l) => l.span_id)).toContain(attemptB.spanId);

    // Effect spans hang under the execution attempt that made them: the model call under A's first
    // (it parked on the remote call), the redispatched call under B's. A's second attempt, which made
    // the first http call, died with A unended, so it was never exported.
    expect(attemptsOf('replica-a').map((x) => x.spanId)).toContain(model.parentSpanId);
    expect(heldSpan.parentSpanId).toBe(attemptB.spanId);
  });
});
