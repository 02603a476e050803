import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient, WaymarkError } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { OtlpReceiver } from './support/otlp-receiver.js';

/*
 * Tracing of a real `waymark server` (docs/tracing.md), exported over OTLP/HTTP to a receiver in
 * this process: a span per RPC continuing the caller's traceparent, a span per SQL statement under
 * it with the statement's text and never its parameters, log lines carrying the span's ids; and
 * with no OTEL_* variable set, nothing is exported at all.
 */

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const SECRET_RUN_ID = '0192f3a4-5b6c-7d8e-9f01-23456789abcd';

let db: TestDatabase;
let receiver: OtlpReceiver;

beforeAll(async () => {
  db = await createTestDatabase('waymark_tracing');
  receiver = await OtlpReceiver.start();
});
afterAll(async () => {
  await receiver?.close();
  await db?.drop();
});

function env(extra: Record<string, string>): Record<string, string> {
  return { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', OTEL_BSP_SCHEDULE_DELAY: '50', ...extra };
}

/** A GetRun of a run that does not exist, sent with the caller's traceparent; NOT_FOUND expected. */
async function getMissingRun(address: string): Promise<void> {
  const transport = createGrpcTransport({
    baseUrl: `http://${address}`,
    interceptors: [(next) => (req) => {
      req.header.set('traceparent', `00-${CALLER_TRACE}-${CALLER_SPAN}-01`);
      return next(req);
    }],
  });
  const client = createWaymarkClient({ transport });
  const err = await client.getRun(SECRET_RUN_ID).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WaymarkError);
}

describe('tracing a waymark server over OTLP/HTTP', () => {
  it('exports a span per RPC continuing the caller\'s trace, SQL spans under it without parameters, and logs carry the ids', async () => {
    const server = WaymarkProcess.start(['server'], { env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'waymark-test' }) });
    try {
      await getMissingRun(await server.listening());
    } finally {
      // A clean stop flushes the batch processor.
      expect((await server.stop('SIGTERM')).code).toBe(0);
    }
    const trace = receiver.spans.filter((s) => s.traceId === CALLER_TRACE);
    const rpc = trace.find((s) => s.name === 'waymark.v1.RunService/GetRun');
    expect(rpc, JSON.stringify(receiver.spans.map((s) => s.name))).toBeDefined();
    expect(rpc!.parentSpanId).toBe(CALLER_SPAN);
    expect(rpc!.kind).toBe(2); // SERVER
    expect(rpc!.service).toBe('waymark-test');
    expect(rpc!.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'waymark.v1.RunService', 'rpc.method': 'GetRun', 'rpc.grpc.status_code': 5 });
    expect(rpc!.status).toBe(2); // ERROR

    // The statements that looked the run up, in the same trace under the RPC's span.
    const sql = trace.filter((s) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql');
    expect(sql.length).toBeGreaterThan(0);
    const ids = new Set(trace.map((s) => s.spanId));
    for (const s of sql) expect(ids.has(s.parentSpanId) || s.parentSpanId === rpc!.spanId).toBe(true);
    // Parameters are never recorded: the run id the call carried is in no attribute of any span.
    for (const s of receiver.spans) expect(JSON.stringify(s.attributes)).not.toContain(SECRET_RUN_ID);

    const failed = server.logs.find((l) => l.msg === 'rpc failed');
    expect(failed).toMatchObject({ trace_id: CALLER_TRACE, span_id: rpc!.spanId });
  });

  it('exports a span per execution attempt in the run\'s own trace (its id is the run id)', async () => {
    const dev = WaymarkProcess.start(['dev'], { env: env({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }) });
    let runId = '';
    try {
      const client = createWaymarkClient({ address: await dev.listening() });
      // wait: true returns once the run parked on its approval, its first attempt ended.
      ({ run: { id: runId } } = await client.startRun('refund', { order: 'A-1', amount: 1 }, { idempotencyKey: 'traced', wait: true }));
    } finally {
      expect((await dev.stop('SIGTERM')).code).toBe(0);
    }
    const attempts = receiver.spans.filter((s) => s.name === 'waymark.execution' && s.attributes['waymark.run_id'] === runId);
    expect(attempts.length, JSON.stringify(receiver.spans.map((s) => s.name))).toBeGreaterThanOrEqual(1);
    for (const a of attempts) {
      expect(a.traceId).toBe(runId.replaceAll('-', ''));
      expect(a.attributes['waymark.workflow']).toBe('refund');
    }
    expect(attempts.map((a) => a.attributes['waymark.outcome'])).toContain('suspended');
    // The StartRun call is in its caller's trace; its span names the run and links to the run's trace.
    const start = receiver.spans.find((s) => s.name === 'waymark.v1.RunService/StartRun' && s.attributes['waymark.run_id'] === runId);
    expect(start, JSON.stringify(receiver.spans.map((s) => s.name))).toBeDefined();
    expect(start!.traceId).not.toBe(runId.replaceAll('-', ''));
    expect(start!.links.map((l) => l.traceId)).toEqual([runId.replaceAll('-', '')]);
    expect(attempts.map((a) => a.parentSpanId)).toContain(start!.links[0]!.spanId);
  });

  it('with no OTEL_* variable, exports nothing and logs no trace ids', async () => {
    const before = receiver.spans.length;
    const server = WaymarkProcess.start(['server'], { env: env({}) });
    try {
      await getMissingRun(await server.listening());
    } finally {
      expect((await server.stop('SIGTERM')).code).toBe(0);
    }
    expect(receiver.spans.length).toBe(before);
    expect(server.logs.some((l) => 'trace_id' in l)).toBe(false);
    expect(server.logs.some((l) => l.msg === 'tracing on: spans exported over OTLP/HTTP')).toBe(false);
  });
});
