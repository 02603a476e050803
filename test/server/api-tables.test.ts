import { readFileSync } from 'node:fs';
import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { errorFromJson } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { create, fromJson, toBinary, type JsonValue } from '@bufbuild/protobuf';
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { domainStatus } from '../../src/server/errors/error-mapping.js';
import { JournalCorruptError, NonDeterminismError } from '../../src/engine/errors.js';
import {
  BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema, QuotaFailureSchema, ResourceInfoSchema, RetryInfoSchema,
} from '../../src/gen/google/rpc/error_details_pb.js';
import { GetRunRequestSchema, RunService, StreamRunEventsRequestSchema } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { AdminService } from '../../src/gen/waymark/v1/admin_service_pb.js';
import { WorkerService } from '../../src/gen/waymark/v1/worker_service_pb.js';
import { FlowSchema, FlowService } from '../../src/gen/waymark/v1/flow_service_pb.js';
import { McpService } from '../../src/gen/waymark/v1/mcp_service_pb.js';
import { ScheduleService } from '../../src/gen/waymark/v1/schedule_service_pb.js';
import { StreamTokens } from '../../src/engine/access/stream-tokens.js';
import { LeaseLostError } from '../../src/journal/errors.js';
import { DEFAULT_LIMITS, MAX_JSON_DEPTH, MAX_RUN_TIMEOUT_MS } from '../../src/journal/limits.js';
import { DEFAULT_CLIENT_LIMITS } from '../../src/server/transport/client-limits.js';
import { MAX_KEY_LENGTH, MAX_LABEL_VALUE, MAX_LABELS, MAX_TEXT_LENGTH, PAGE_SIZES } from '../../src/server/convert/request-validation.js';
import { connectJson, grpcFrame, grpcRaw, rawRequest, startApiServer, type ApiServer, type RawResponse } from '../support/api-server.js';
import { TestCertificates } from '../support/test-certificates.js';
import { json } from './api-harness.js';
import { stalledReader } from './raw-http2.js';

/*
 * docs/api.md's "Limits" and "Errors" tables are read from the markdown and each row is provoked
 * against a real server (HTTP/2, PostgreSQL) with the default limits, so the tables say what the
 * server does: the documented defaults are the ones in force, and each error row's code, reason
 * and details are what a client gets. A row nobody provokes fails the test, as does a reason the
 * server answers that the table lacks. Three rows need a worker race or a corrupted journal that no
 * request can produce; they are checked through the mapping the handlers use (domainStatus). The
 * framework's own refusals (a body, deadline, compression, content type or path it does not take)
 * are provoked with raw HTTP/2 requests, as only a hand-made client sends them.
 */

const TIMEOUT = 120_000;
const UNKNOWN_RUN = '018f0000-0000-7000-8000-000000000000';
const doc = readFileSync('docs/api.md', 'utf8');

/** The rows of the first table after `heading`, each a list of cells (backticks kept). */
function table(heading: string): string[][] {
  const section = doc.slice(doc.indexOf(`\n${heading}\n`));
  const lines = section.split('\n').filter((l) => l.startsWith('|'));
  const end = lines.findIndex((l, i) => i > 1 && !section.includes(`${lines[i - 1]}\n${l}`));
  return lines.slice(2, end === -1 ? undefined : end).map((l) => l.slice(1, -1).split(' | ').map((c) => c.trim()));
}

const ticked = (cell: string): string[] => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

function number(cell: string): number {
  const m = /^([\d,]+)\s*(MiB)?/.exec(cell);
  if (!m) throw new Error(`no number in ${cell}`);
  const n = Number(m[1]!.replaceAll(',', ''));
  return m[2] ? n * 1024 * 1024 : n;
}

/** A TCP proxy in front of PostgreSQL for the small server's store: cutting it is PostgreSQL going away. */
const proxy = {
  target: { host: '127.0.0.1', port: 5432 },
  port: 0,
  sockets: new Set<net.Socket>(),
  server: null as net.Server | null,
  async open(): Promise<void> {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as net.AddressInfo).port;
  },
  async cut(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server!.close(() => resolve());
      for (const s of this.sockets) s.destroy();
    });
  },
};

let api: ApiServer;
let small: ApiServer;
let runs: Client<typeof RunService>;
let signals: Client<typeof SignalService>;
let smallRuns: Client<typeof RunService>;
let smallSignals: Client<typeof SignalService>;
/** A server whose clients may hold one stream each and make few requests (its bucket never refills in a test). */
let limited: ApiServer;
let limitedRuns: Client<typeof RunService>;
/** A server whose clients may leave 64 KiB of responses unread. */
let buffered: ApiServer;
const BUFFERED_LIMIT = 64 * 1024;
/** A server with authentication on (API keys, stream tokens), for the UNAUTHENTICATED and PERMISSION_DENIED rows. */
let authed: ApiServer;
let authedRuns: Client<typeof RunService>;
let authedAdmin: Client<typeof AdminService>;
let flows: Client<typeof FlowService>;
let mcp: Client<typeof McpService>;
let schedules: Client<typeof ScheduleService>;
const AUTH_SECRET = 'the-tables-stream-token-secret-32-chars';

beforeAll(async () => {
  await proxy.open();
  api = await startApiServer({ prefix: 'waymark_tables' });
  small = await startApiServer({
    prefix: 'waymark_tables_small', limits: { journalEntries: 3, streamsPerReplica: 1 },
    storeUrl: (url) => {
      const u = new URL(url);
      proxy.target = { host: u.hostname, port: Number(u.port) };
      u.port = String(proxy.port);
      return u.toString();
    },
  });
  const transport = (address: string) => createGrpcTransport({ baseUrl: `http://${address}`, readMaxBytes: 16 << 20, writeMaxBytes: 16 << 20 });
  runs = createClient(RunService, transport(api.address));
  signals = createClient(SignalService, transport(api.address));
  flows = createClient(FlowService, transport(api.address));
  mcp = createClient(McpService, transport(api.address));
  schedules = createClient(ScheduleService, transport(api.address));
  smallRuns = createClient(RunService, transport(small.address));
  smallSignals = createClient(SignalService, transport(small.address));
  limited = await startApiServer({ prefix: 'waymark_tables_limited', clientLimits: { ratePerSecond: 0.001, burst: 20, streams: 1 } });
  limitedRuns = createClient(RunService, transport(limited.address));
  buffered = await startApiServer({ prefix: 'waymark_tables_buffered', clientLimits: { bufferedBytes: BUFFERED_LIMIT } });
  authed = await startApiServer({ prefix: 'waymark_tables_auth', auth: { streamTokenSecret: AUTH_SECRET } });
  authedRuns = createClient(RunService, transport(authed.address));
  authedAdmin = createClient(AdminService, transport(authed.address));
}, TIMEOUT);

afterAll(async () => {
  await buffered?.close();
  await authed?.close();
  await limited?.close();
  await small?.close();
  await api?.close();
  await proxy.cut();
}, TIMEOUT);

async function failure(call: Promise<unknown> | AsyncIterable<unknown>): Promise<ConnectError> {
  try {
    if (Symbol.asyncIterator in call) for await (const _ of call) { /* drain until the error */ }
    else await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('the call succeeded; the row promises an error');
}

/** The error a raw gRPC answer carries (trailers, or headers for a trailers-only answer). */
function grpcError(res: RawResponse): ConnectError {
  const fields = res.trailers['grpc-status'] !== undefined ? res.trailers : res.headers;
  const err = findTrailerError(new Headers(Object.entries(fields).filter(([k]) => !k.startsWith(':')).map(([k, v]) => [k, String(v)])));
  if (!err) throw new Error(`no gRPC error in the answer: ${JSON.stringify(fields)}`);
  return err;
}

/** The error a Connect unary answer carries in its JSON body. */
function jsonError(res: { json: Record<string, unknown> }): ConnectError {
  return errorFromJson(res.json as never, undefined, new ConnectError('not an error'));
}

const getRunFrame = (runId: string) => grpcFrame(toBinary(GetRunRequestSchema, create(GetRunRequestSchema, { runId })));

/**
 * A client that reads nothing on the buffered server: one GetRun of a 200 KB run blocked on flow
 * control (alone, it may go past the limit), a second reset when its write would add to that, then
 * a third call refused before its handler: the error it gets.
 */
async function overBufferLimit(): Promise<ConnectError> {
  const url = `http://${buffered.address}`;
  const client = createClient(RunService, createGrpcTransport({ baseUrl: url }));
  const { run } = await client.startRun({ workflow: 'echo-flow', input: json({ value: 'x'.repeat(100_000) }), wait: true });
  const first = stalledReader(url, RunService.method.getRun, { runId: run!.id });
  await first.responded;
  const second = stalledReader(url, RunService.method.getRun, { runId: run!.id });
  await new Promise((resolve) => (second.stream.closed ? resolve(undefined) : second.stream.once('close', resolve)));
  expect(second.stream.rstCode).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  try {
    return grpcError(await grpcRaw(buffered.address, RunService.method.getRun, getRunFrame(run!.id)));
  } finally {
    first.session.destroy();
    second.session.destroy();
  }
}

const DETAILS = { BadRequest: BadRequestSchema, ResourceInfo: ResourceInfoSchema, PreconditionFailure: PreconditionFailureSchema, QuotaFailure: QuotaFailureSchema, RetryInfo: RetryInfoSchema };

describe('docs/api.md "Limits"', () => {
  const rows = table('## Limits');
  const provoke: Record<string, (documented: number) => Promise<void>> = {
    'request message': async (limit) => {
      expect(limit).toBe(DEFAULT_LIMITS.requestBytes);
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({ value: 'x'.repeat(limit + 1024) }) }));
      expect(err.code).toBe(Code.ResourceExhausted);
    },
    'JSON payload, as JSON text (input, output, signal, decision, tool result)': async (limit) => {
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({ value: 'x'.repeat(limit) }) }));
      expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: 'PAYLOAD_TOO_LARGE', metadata: { field: 'input', limit_bytes: String(limit) } });
    },
    'journal entries of one run': async (limit) => {
      expect(limit).toBe(DEFAULT_LIMITS.journalEntries);
      // Provoked where the limit is 3: the parked run holds 3 entries, a signal's resolution would be the 4th.
      const { run } = await smallRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      const err = await failure(smallSignals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 1 }) }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe('JOURNAL_FULL');
    },
    'event streams one replica serves at once': async (limit) => {
      expect(limit).toBe(DEFAULT_LIMITS.streamsPerReplica);
      const { run } = await smallRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      const abort = new AbortController();
      const held = smallRuns.streamRunEvents({ runId: run!.id, followSuspended: true }, { signal: abort.signal })[Symbol.asyncIterator]();
      await held.next();
      const err = await failure(smallRuns.streamRunEvents({ runId: run!.id, followSuspended: true }));
      abort.abort();
      await held.next().catch(() => undefined);
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe('STREAM_LIMIT');
      expect(err.findDetails(RetryInfoSchema)).toHaveLength(1);
    },
    'nesting of a JSON value': async (levels) => {
      expect(levels).toBe(MAX_JSON_DEPTH);
      const nest = (n: number) => Array.from({ length: n - 1 }).reduce<unknown>((v) => [v], [1]);
      await runs.startRun({ workflow: 'echo-flow', input: json({ value: nest(levels - 1) } as never) });
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({ value: nest(levels) } as never) }));
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe('INVALID_REQUEST');
    },
    'labels of a run': async (limit) => {
      expect(limit).toBe(MAX_LABELS);
      const labels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'v']));
      await runs.startRun({ workflow: 'echo-flow', input: json({}), labels: labels(limit) });
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({}), labels: labels(limit + 1) }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['labels']);
    },
    'a label value': async (limit) => {
      expect(limit).toBe(MAX_LABEL_VALUE);
      await runs.startRun({ workflow: 'echo-flow', input: json({}), labels: { k: '😀'.repeat(limit) } });
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({}), labels: { k: 'x'.repeat(limit + 1) } }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['labels[k]']);
    },
    'an idempotency key, signal name or id, request id': async (limit) => {
      expect(limit).toBe(MAX_KEY_LENGTH);
      const err = await failure(signals.sendSignal({ runId: UNKNOWN_RUN, name: 'x'.repeat(limit + 1), signalId: 'y'.repeat(limit + 1) }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['name', 'signal_id']);
    },
    '`by` of a decision': async (limit) => {
      const err = await failure(signals.decideApproval({ id: `${UNKNOWN_RUN}:1`, by: 'x'.repeat(limit + 1) }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['by']);
    },
    'a comment': async (limit) => {
      expect(limit).toBe(MAX_TEXT_LENGTH);
      const err = await failure(signals.decideApproval({ id: `${UNKNOWN_RUN}:1`, by: 'ann', comment: 'x'.repeat(limit + 1) }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['comment']);
    },
    'a run timeout (StartRun `timeout`)': async (limit) => {
      expect(limit * 86_400_000).toBe(MAX_RUN_TIMEOUT_MS);
      const seconds = BigInt(limit) * 86_400n;
      const { run } = await runs.startRun({ workflow: 'echo-flow', input: json({}), timeout: { seconds, nanos: 0 } });
      expect(run!.deadlineTime!.seconds - run!.createTime!.seconds).toBe(seconds);
      const err = await failure(runs.startRun({ workflow: 'echo-flow', input: json({}), timeout: { seconds, nanos: 1 } }));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['timeout']);
    },
    '`page_size`': async (limit) => {
      expect(limit).toBe(PAGE_SIZES.runs.max);
      expect(limit).toBe(PAGE_SIZES.approvals.max);
      await runs.listRuns({ pageSize: limit * 10 }); // clamped, not refused
    },
    'response bytes one client leaves unread on a replica': async (limit) => {
      expect(limit).toBe(DEFAULT_CLIENT_LIMITS.bufferedBytes);
      const err = await overBufferLimit(); // on a server whose limit is 64 KiB
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: 'CLIENT_BUFFER_LIMIT', metadata: { limit_bytes: String(BUFFERED_LIMIT) } });
      expect(err.findDetails(RetryInfoSchema)).toHaveLength(1);
    },
  };

  it('has a row for every limit the server enforces, each provoked', { timeout: TIMEOUT }, async () => {
    expect(rows.map((r) => r[0])).toEqual(Object.keys(provoke));
    for (const [limit, value] of rows) await provoke[limit!]!(number(value!));
  });
});

describe('docs/api.md "Errors"', () => {
  const rows = table('## Errors');
  let parked: string;
  let approvalId: string;

  /** Each row's provocation: the error a client gets. Keys are `CODE reason` as the table writes them. */
  const provoke: Record<string, () => Promise<ConnectError>> = {
    'INVALID_ARGUMENT MALFORMED_REQUEST': async () => {
      // A binary body that does not decode (a varint that never ends), and an unknown enum name over Connect JSON (names the field).
      const binary = grpcError(await grpcRaw(api.address, RunService.method.getRun, grpcFrame(Buffer.from([0x0a, 0xff]))));
      expect([Code[binary.code], binary.findDetails(ErrorInfoSchema)[0]?.reason]).toEqual(['InvalidArgument', 'MALFORMED_REQUEST']);
      const err = jsonError(await connectJson(api.address, RunService.method.listRuns, '{"statuses":["RUN_STATUS_NOPE"]}'));
      expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field)).toEqual(['statuses']);
      return err;
    },
    'INVALID_ARGUMENT INVALID_DEADLINE': async () => grpcError(await grpcRaw(api.address, RunService.method.getRun, getRunFrame(UNKNOWN_RUN), { 'grpc-timeout': 'soon' })),
    'INVALID_ARGUMENT INVALID_REQUEST': () => failure(runs.getRun({ runId: 'not-a-run' })),
    'INVALID_ARGUMENT INVALID_INPUT': () => failure(runs.startRun({ workflow: 'refund', input: json({ order: 'o', amount: 'lots' }) })),
    'INVALID_ARGUMENT INVALID_RESOLUTION': () => failure(signals.sendSignal({ runId: parked, name: 'go', payload: json({ n: 'not a number' }) })),
    'INVALID_ARGUMENT INVALID_FLOW': () => failure(flows.registerFlow({ flow: fromJson(FlowSchema, { name: 'table-flow', start: 'nowhere', nodes: [{ id: 'done', end: {} }] }) })),
    'INVALID_ARGUMENT INVALID_INVALIDATE_TARGET': () => failure(runs.resumeRun({ runId: parked, invalidate: [999n] })),
    'INVALID_ARGUMENT INVALID_FORK': () => failure(runs.forkRun({ runId: parked, atSeq: 999n })),
    'INVALID_ARGUMENT RUNS_NOT_COMPARABLE': async () => {
      const { run } = await runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
      return failure(runs.compareRuns({ runIdA: parked, runIdB: run!.id }));
    },
    'INVALID_ARGUMENT NESTING_TOO_DEEP': () => {
      // Arguments 30 levels deep are a valid Value, but sit 4 levels down in the flow the store keeps.
      let deep: JsonValue = 1;
      for (let i = 0; i < 30; i++) deep = { d: deep };
      return failure(flows.registerFlow({
        flow: fromJson(FlowSchema, { name: 'deep-flow', start: 'call', nodes: [{ id: 'call', tool: { tool: 'echo', arguments: deep } }, { id: 'done', end: {} }], edges: [{ from: 'call', to: 'done' }] }),
      }));
    },
    'INVALID_ARGUMENT NUL_CHARACTER': () => failure(runs.startRun({ workflow: 'echo-flow', input: json({ value: 'a\u0000' }) })),
    'INVALID_ARGUMENT UNPAIRED_SURROGATE': async () => {
      const res = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","input":{"value":"\\ud800"}}');
      return errorFromJson(res.json as never, undefined, new ConnectError('not an error'));
    },
    'NOT_FOUND RUN_NOT_FOUND': () => failure(runs.getRun({ runId: UNKNOWN_RUN })),
    'NOT_FOUND WORKFLOW_NOT_FOUND': () => failure(runs.startRun({ workflow: 'nope', input: json({}) })),
    'NOT_FOUND FLOW_NOT_FOUND': () => failure(flows.getFlow({ name: 'no-such-flow' })),
    'NOT_FOUND MCP_SERVER_NOT_FOUND': () => failure(mcp.removeMcpServer({ name: 'no-such-server' })),
    'NOT_FOUND SCHEDULE_NOT_FOUND': () => failure(schedules.getSchedule({ scheduleId: 'no-such-schedule' })),
    'ALREADY_EXISTS SCHEDULE_EXISTS': async () => {
      const schedule = { id: 'table-schedule', paused: true, spec: { cron: ['0 3 * * *'] }, action: { workflow: 'echo-flow', input: json({}) } };
      await schedules.createSchedule({ schedule });
      return failure(schedules.createSchedule({ schedule }));
    },
    'ALREADY_EXISTS FLOW_NAME_TAKEN': () => failure(flows.registerFlow({ flow: fromJson(FlowSchema, { name: 'refund', start: 'done', nodes: [{ id: 'done', end: {} }] }) })),
    'NOT_FOUND APPROVAL_NOT_FOUND': () => failure(signals.getApproval({ id: `${UNKNOWN_RUN}:1` })),
    'NOT_FOUND NAMESPACE_NOT_FOUND': async () => {
      const { secret } = await authed.deps.api.keys.create({ name: 'a', namespace: 'team-a', scopes: ['runs:read'], createdByKeyId: null });
      return failure(authedRuns.listRuns({ namespace: 'team-b' }, { headers: { authorization: `Bearer ${secret}` } }));
    },
    'NOT_FOUND KEY_NOT_FOUND': async () => {
      const { secret } = await authed.deps.api.keys.create({ name: 'admin', namespace: null, scopes: ['admin'], createdByKeyId: null });
      return failure(authedAdmin.revokeKey({ id: '0123456789abcdef' }, { headers: { authorization: `Bearer ${secret}` } }));
    },
    'NOT_FOUND WORKER_NOT_FOUND': () => failure(createClient(WorkerService, createGrpcTransport({ baseUrl: `http://${api.address}` })).pollTask({ workerId: 'nobody' })),
    'ALREADY_EXISTS CLIENT_CERT_TAKEN': async () => {
      const { secret } = await authed.deps.api.keys.create({ name: 'admin', namespace: null, scopes: ['admin'], createdByKeyId: null });
      const asAdmin = { headers: { authorization: `Bearer ${secret}` } };
      await authedAdmin.createKey({ namespace: 'team-a', scopes: ['runs:read'], clientCertSha256: 'ab'.repeat(32) }, asAdmin);
      return failure(authedAdmin.createKey({ namespace: 'team-b', scopes: ['runs:read'], clientCertSha256: 'ab'.repeat(32) }, asAdmin));
    },
    'ALREADY_EXISTS IDEMPOTENCY_KEY_REUSED': async () => {
      await runs.startRun({ workflow: 'echo-flow', input: json({}), idempotencyKey: 'table-key' });
      return failure(runs.startRun({ workflow: 'wait-signal', input: json({}), idempotencyKey: 'table-key' }));
    },
    'FAILED_PRECONDITION WRONG_STATE': async () => {
      const { run } = await runs.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
      return failure(signals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 1 }) }));
    },
    'FAILED_PRECONDITION FLOW_DRIFT': async () => {
      const { run } = await runs.startRun({ workflow: 'strict-flow', input: json({}), wait: true });
      // A deploy changed the strict workflow: its pinned digest no longer matches.
      await api.db.admin.query('UPDATE runs SET workflow_digest = $1 WHERE id = $2', ['sha256:an-earlier-deploy', run!.id]);
      return failure(runs.resumeRun({ runId: run!.id }));
    },
    'FAILED_PRECONDITION NON_DETERMINISM, JOURNAL_CORRUPT': async () => {
      // Raised mid-execution when journal and code disagree; no request can corrupt a journal.
      const drift = new NonDeterminismError(parked, 'root', 'step "a"', 'step "b"', 'a different effect');
      expect(domainStatus(new JournalCorruptError(parked, 1, 'a gap'))?.findDetails(ErrorInfoSchema)[0]?.reason).toBe('JOURNAL_CORRUPT');
      return domainStatus(drift)!;
    },
    'FAILED_PRECONDITION STREAM_TOKENS_DISABLED': () => failure(runs.createStreamToken({ runId: parked })),
    'UNAUTHENTICATED CREDENTIALS_MISSING': () => failure(authedRuns.getRun({ runId: UNKNOWN_RUN })),
    'UNAUTHENTICATED CREDENTIALS_MALFORMED': () => failure(authedRuns.getRun({ runId: UNKNOWN_RUN }, { headers: { authorization: 'Bearer nope' } })),
    'UNAUTHENTICATED CREDENTIALS_INVALID': () => failure(authedRuns.getRun({ runId: UNKNOWN_RUN }, { headers: { authorization: `Bearer wmk_0123456789abcdef_${'x'.repeat(43)}` } })),
    'UNAUTHENTICATED KEY_REVOKED': async () => {
      const { secret, key } = await authed.deps.api.keys.create({ name: 'old', namespace: 'team-a', scopes: ['runs:read'], createdByKeyId: null });
      await authed.deps.api.keys.revoke(key.id);
      return failure(authedRuns.getRun({ runId: UNKNOWN_RUN }, { headers: { authorization: `Bearer ${secret}` } }));
    },
    'UNAUTHENTICATED CERTIFICATE_NOT_BOUND': async () => {
      // A server with mTLS, and a client certificate its CA signed that no key is bound to.
      const certs = new TestCertificates();
      const served = certs.server();
      const client = certs.client('unbound');
      const mtls = await startApiServer({
        prefix: 'waymark_tables_mtls', auth: {}, tls: { certFile: served.certFile, keyFile: served.keyFile, clientCaFile: certs.caFile },
      });
      try {
        const t = createGrpcTransport({ baseUrl: mtls.server.url, nodeOptions: { ca: certs.ca, cert: client.cert, key: client.key } });
        return await failure(createClient(RunService, t).getRun({ runId: UNKNOWN_RUN }));
      } finally {
        await mtls.close();
        certs.remove();
      }
    },
    'UNAUTHENTICATED TOKEN_EXPIRED': async () => {
      const { token } = new StreamTokens({ secrets: [AUTH_SECRET], now: () => Date.now() - 60_000 }).mint({ namespace: 'default', runId: UNKNOWN_RUN, ttlMs: 1_000 });
      return failure(authedRuns.streamRunEvents({ runId: UNKNOWN_RUN }, { headers: { authorization: `Bearer ${token}` } }));
    },
    'PERMISSION_DENIED SCOPE_MISSING': async () => {
      const { secret } = await authed.deps.api.keys.create({ name: 'reader', namespace: 'team-a', scopes: ['runs:read'], createdByKeyId: null });
      return failure(authedRuns.startRun({ workflow: 'echo-flow', input: json({}) }, { headers: { authorization: `Bearer ${secret}` } }));
    },
    'PERMISSION_DENIED TOKEN_SCOPE': async () => {
      const { token } = new StreamTokens({ secrets: [AUTH_SECRET] }).mint({ namespace: 'default', runId: UNKNOWN_RUN, ttlMs: 60_000 });
      return failure(authedRuns.getJournal({ runId: UNKNOWN_RUN }, { headers: { authorization: `Bearer ${token}` } }));
    },
    'ABORTED LEASE_LOST': async () => domainStatus(new LeaseLostError(parked, 3))!, // a takeover mid-operation: a worker race, not a request
    'ABORTED TASK_LOST': () => failure(createClient(WorkerService, createGrpcTransport({ baseUrl: `http://${api.address}` })).heartbeat({ workerId: 'w', taskId: `${UNKNOWN_RUN}:1`, fencingToken: 1n })),
    'RESOURCE_EXHAUSTED PAYLOAD_TOO_LARGE': () => failure(signals.sendSignal({ runId: parked, name: 'go', payload: json({ n: 1, pad: 'x'.repeat(DEFAULT_LIMITS.payloadBytes) }) })),
    'RESOURCE_EXHAUSTED JOURNAL_FULL': async () => {
      const { run } = await smallRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      return failure(smallSignals.sendSignal({ runId: run!.id, name: 'go', payload: json({ n: 1 }) }));
    },
    'RESOURCE_EXHAUSTED STREAM_LIMIT': async () => {
      const { run } = await smallRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      const abort = new AbortController();
      const held = smallRuns.streamRunEvents({ runId: run!.id, followSuspended: true }, { signal: abort.signal })[Symbol.asyncIterator]();
      await held.next();
      const err = await failure(smallRuns.streamRunEvents({ runId: run!.id, followSuspended: true }));
      abort.abort();
      await held.next().catch(() => undefined);
      return err;
    },
    'RESOURCE_EXHAUSTED RATE_LIMITED': async () => {
      // Runs after CLIENT_STREAM_LIMIT (see the order below): the limited server's bucket does not refill.
      for (let i = 0; i < 30; i++) {
        const err = await failure(limitedRuns.getRun({ runId: UNKNOWN_RUN }));
        if (err.code === Code.ResourceExhausted) return err;
      }
      throw new Error('30 requests over a burst of 20 were all served');
    },
    'RESOURCE_EXHAUSTED CLIENT_STREAM_LIMIT': async () => {
      const { run } = await limitedRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      const abort = new AbortController();
      const held = limitedRuns.streamRunEvents({ runId: run!.id, followSuspended: true }, { signal: abort.signal })[Symbol.asyncIterator]();
      await held.next();
      const err = await failure(limitedRuns.streamRunEvents({ runId: run!.id, followSuspended: true }));
      abort.abort();
      await held.next().catch(() => undefined);
      return err;
    },
    'RESOURCE_EXHAUSTED CLIENT_BUFFER_LIMIT': () => overBufferLimit(),
    'RESOURCE_EXHAUSTED REQUEST_TOO_LARGE': () => failure(runs.startRun({ workflow: 'echo-flow', input: json({ value: 'x'.repeat(DEFAULT_LIMITS.requestBytes) }) })),
    'UNAVAILABLE STORE_UNAVAILABLE': async () => {
      // PostgreSQL goes away under the small server: its connections drop and new ones are refused.
      const { run } = await smallRuns.startRun({ workflow: 'echo-flow', input: json({}), wait: true });
      await proxy.cut();
      try {
        return await failure(smallRuns.getRun({ runId: run!.id }));
      } finally {
        await proxy.open();
      }
    },
    'UNAVAILABLE SHUTTING_DOWN': async () => {
      // Shutting down: an open stream ends with UNAVAILABLE (the small server is closed here, last).
      const { run } = await smallRuns.startRun({ workflow: 'wait-signal', input: json({}), wait: true });
      const stream = smallRuns.streamRunEvents({ runId: run!.id, followSuspended: true })[Symbol.asyncIterator]();
      await stream.next();
      const closing = small.server.close(200);
      const err = await failure({ [Symbol.asyncIterator]: () => stream });
      await closing;
      return err;
    },
    'DEADLINE_EXCEEDED DEADLINE_EXCEEDED': async () => {
      // A stream that follows a parked run outlives its 300 ms deadline.
      const follow = grpcFrame(toBinary(StreamRunEventsRequestSchema, create(StreamRunEventsRequestSchema, { runId: parked, followSuspended: true })));
      return grpcError(await grpcRaw(api.address, RunService.method.streamRunEvents, follow, { 'grpc-timeout': '300m' }));
    },
    'UNIMPLEMENTED UNKNOWN_METHOD': async () => {
      const res = await rawRequest(api.address, '/waymark.v1.RunService/NoSuchMethod', { 'content-type': 'application/json' }, Buffer.from('{}'));
      expect(res.status).toBe(404);
      return jsonError({ json: JSON.parse(res.body.toString()) as Record<string, unknown> });
    },
    'UNIMPLEMENTED UNSUPPORTED_MEDIA_TYPE, METHOD_NOT_ALLOWED': async () => {
      const put = await rawRequest(api.address, `/waymark.v1.RunService/StartRun`, { ':method': 'PUT', 'content-type': 'application/json' }, Buffer.from('{}'));
      expect(put.status).toBe(405);
      const notAllowed = jsonError({ json: JSON.parse(put.body.toString()) as Record<string, unknown> });
      expect([Code[notAllowed.code], notAllowed.findDetails(ErrorInfoSchema)[0]?.reason]).toEqual(['Unimplemented', 'METHOD_NOT_ALLOWED']);
      const plain = await connectJson(api.address, RunService.method.getRun, '{}', { 'content-type': 'text/plain' });
      expect(plain.status).toBe(415);
      return jsonError(plain);
    },
    'UNIMPLEMENTED UNSUPPORTED_COMPRESSION': async () => grpcError(await grpcRaw(api.address, RunService.method.getRun, getRunFrame(UNKNOWN_RUN), { 'grpc-encoding': 'snappy' })),
    'INTERNAL INTERNAL': async () => {
      // A bug: a store call that throws what no mapping knows.
      const runGet = api.store.runGet.bind(api.store);
      api.store.runGet = () => Promise.reject(new TypeError('a bug in the store'));
      try {
        return await failure(runs.getRun({ runId: parked }));
      } finally {
        api.store.runGet = runGet;
      }
    },
  };

  it('has a row for every error the server answers, and each row is what a client gets', { timeout: TIMEOUT }, async () => {
    parked = (await runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true })).run!.id;
    approvalId = (await runs.startRun({ workflow: 'refund', input: json({ order: 'o', amount: 1 }), wait: true })).waitingOn[0]!.approvalId;
    expect(approvalId).toContain(':');
    const keys = rows.map(([code, reason]) => `${ticked(code!)[0]} ${ticked(reason!).join(', ') || reason}`);
    expect(keys).toEqual(Object.keys(provoke));
    // The stream row closes the small server, so it runs last; the rate limit row empties the limited server's bucket, so it runs just before.
    const late = (i: number) => ['RESOURCE_EXHAUSTED RATE_LIMITED', 'UNAVAILABLE SHUTTING_DOWN'].indexOf(keys[i]!);
    const order = [...rows.keys()].sort((a, b) => late(a) - late(b));
    for (const i of order) {
      const [codeCell, reasonCell, , detailsCell] = rows[i]!;
      const err = await provoke[keys[i]!]!();
      const code = ticked(codeCell!)[0]!;
      expect(Code[err.code], keys[i]).toBe(code.split('_').map((w) => w[0] + w.slice(1).toLowerCase()).join(''));
      const reasons = ticked(reasonCell!);
      if (reasons.length > 0) {
        expect(err.findDetails(ErrorInfoSchema)[0]?.reason, keys[i]).toBe(reasons[0]);
        expect(err.findDetails(ErrorInfoSchema)[0]?.domain).toBe('waymark');
      }
      for (const name of ticked(detailsCell!).filter((d) => d in DETAILS)) {
        expect(err.findDetails(DETAILS[name as keyof typeof DETAILS]), `${keys[i]}: ${name}`).not.toHaveLength(0);
      }
      if (code === 'INTERNAL') {
        expect(err.rawMessage).toContain('the server logged the details');
        expect(api.logs.some((l) => l.level >= 50 && JSON.stringify(l).includes('a bug in the store'))).toBe(true);
      }
    }
  });
});
