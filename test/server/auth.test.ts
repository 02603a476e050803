import { create, toJsonString, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES } from '../../src/engine/access/api-keys.js';
import { StreamTokens } from '../../src/engine/access/stream-tokens.js';
import { ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { AdminService, ListKeysResponseSchema } from '../../src/gen/waymark/v1/admin_service_pb.js';
import { FlowService } from '../../src/gen/waymark/v1/flow_service_pb.js';
import { McpService } from '../../src/gen/waymark/v1/mcp_service_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { ScheduleService } from '../../src/gen/waymark/v1/schedule_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { WebhookService } from '../../src/gen/waymark/v1/webhook_service_pb.js';
import { WorkerService } from '../../src/gen/waymark/v1/worker_service_pb.js';
import { Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import { ACCESS_RULES as ACCESS } from '../../src/server/auth/access-rules.js';
import { startApiServer, type ApiServer } from '../support/api-server.js';
import { until } from '../support/until.js';
import { opensslAvailable, TestCertificates, type Issued } from '../support/test-certificates.js';
import { json } from './api-harness.js';

/*
 * Authentication and authorization on a real server (HTTP/2, PostgreSQL, docs/security.md): one
 * table of every RPC of the API, each called with every kind of bad credential. Each refusal must
 * carry the documented code and reason, write nothing (row counts of every table, before and
 * after), and echo no credential and nothing of the namespace the caller may not see.
 *
 * With openssl, the server serves TLS and asks for client certificates (mTLS, `optional`): calls
 * without one are the bearer cases; certificates bound to keys (CreateKey's client_cert_sha256)
 * authenticate without a header, and an unbound or revoked one is refused like a bad key.
 */

const TIMEOUT = 120_000;
const SECRET = 'a-stream-token-secret-of-32-characters-or-more';
const UNKNOWN_RUN = '018f0000-0000-7000-8000-000000000000';

let s: ApiServer;
/** The test CA, and client certificates: bound to keys.a, keys.aRead and the revoked key; one unbound; one of another CA. */
let certs: TestCertificates | undefined;
let otherCa: TestCertificates | undefined;
const cert: Partial<Record<'a' | 'aRead' | 'revoked' | 'unbound' | 'foreign', Issued>> = {};
/** HTTP/2 to the server: over TLS trusting the test CA when openssl is there, presenting `client` if given. */
const transport = (client?: Issued) => createGrpcTransport({
  baseUrl: s.server.url,
  ...(certs ? { nodeOptions: { ca: certs.ca, ...(client ? { cert: client.cert, key: client.key } : {}) } } : {}),
});
const keys: Record<'admin' | 'a' | 'aRead' | 'b' | 'revoked', string> = { admin: '', a: '', aRead: '', b: '', revoked: '' };
let revokedId = '';
/** team-a resources: a run parked on an approval, one parked on a signal. */
let parked = '';
let approvalId = '';
let waiting = '';
/** team-b's run parked on an approval. */
let otherApproval = '';
let streamToken = '';
/** team-a's webhook endpoint. */
let endpointId = '';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Calls `method` with `headers`; the ConnectError, or null when it succeeded. */
async function call(service: DescService, method: DescMethod, request: object, headers: Record<string, string>, certificate?: Issued): Promise<ConnectError | null> {
  const client = createClient(service, transport(certificate)) as unknown as Record<string, (req: object, opts: object) => unknown>;
  try {
    const result = client[method.localName]!(create(method.input, request as never), { headers, timeoutMs: 10_000 });
    if (method.methodKind === 'server_streaming') {
      for await (const _ of result as AsyncIterable<unknown>) break;
    } else {
      await result;
    }
    return null;
  } catch (err) {
    return ConnectError.from(err);
  }
}

/** A valid request of each RPC, addressing team-a's resources (namespace left to the key). */
const requests = (): Record<string, object> => ({
  'RunService/StartRun': { workflow: 'echo-flow', input: json({}) },
  'RunService/GetRun': { runId: parked },
  'RunService/ListRuns': {},
  'RunService/GetJournal': { runId: parked },
  'RunService/StreamRunEvents': { runId: parked },
  'RunService/ResumeRun': { runId: parked },
  'RunService/CancelRun': { runId: parked },
  'RunService/ListWorkflows': {},
  'RunService/GetRunProvenance': { runId: parked },
  'RunService/CreateStreamToken': { runId: parked },
  'RunService/ForkRun': { runId: parked, atSeq: 1n, dryRun: true },
  'RunService/CompareRuns': { runIdA: parked, runIdB: parked },
  'RunService/PurgeRuns': { olderThan: { seconds: 86_400n, nanos: 0 }, dryRun: true },
  'SignalService/SendSignal': { runId: waiting, name: 'go', payload: json({ n: 1 }) },
  'SignalService/ListApprovals': {},
  'SignalService/GetApproval': { id: approvalId },
  'SignalService/DecideApproval': { id: approvalId, approve: true, by: 'mallory' },
  'WebhookService/CreateWebhookEndpoint': { url: 'https://hooks.example.com/a' },
  'WebhookService/ListWebhookEndpoints': {},
  'WebhookService/DeleteWebhookEndpoint': { endpointId: endpointId },
  'WebhookService/RotateWebhookSecret': { endpointId: endpointId },
  'WebhookService/ListWebhookDeliveries': {},
  'WebhookService/RedeliverWebhook': { deliveryId: 'whd_0' },
  'FlowService/RegisterFlow': { flow: { name: 'auth-flow', start: 'done', nodes: [{ id: 'done', kind: { case: 'end', value: {} } }] } },
  'FlowService/GetFlow': { name: 'auth-flow' },
  'FlowService/ListFlows': {},
  'AdminService/CreateKey': { namespace: 'team-a', scopes: ['runs:read'] },
  'AdminService/ListKeys': {},
  'AdminService/RevokeKey': { id: revokedId },
  'WorkerService/RegisterWorker': { workerId: 'w-1', tools: [{ name: 'remote_probe' }] },
  'WorkerService/PollTask': { workerId: 'w-1', wait: { seconds: 0n, nanos: 1_000_000 } },
  'WorkerService/Heartbeat': { workerId: 'w-1', taskId: `${parked}:1`, fencingToken: 1n },
  'WorkerService/CompleteTask': { workerId: 'w-1', taskId: `${parked}:1`, fencingToken: 1n, outcome: { case: 'output', value: json({}) } },
  'WorkerService/ListTools': {},
  'McpService/PutMcpServer': { server: { name: 'auth-mcp', transport: { case: 'http', value: { url: 'http://127.0.0.1:9/mcp', headers: { authorization: 'Bearer secret-mcp' } } } } },
  'McpService/ListMcpServers': {},
  'McpService/RemoveMcpServer': { name: 'auth-mcp' },
  'ScheduleService/CreateSchedule': { schedule: { id: 'auth-new', spec: { cron: ['0 3 * * *'] }, action: { workflow: 'echo-flow', input: json({}) }, paused: true } },
  'ScheduleService/GetSchedule': { scheduleId: 'auth-sched' },
  'ScheduleService/ListSchedules': {},
  'ScheduleService/UpdateSchedule': { scheduleId: 'auth-sched', updateMask: { paths: ['remaining_actions'] }, schedule: { remainingActions: 1n } },
  'ScheduleService/PauseSchedule': { scheduleId: 'auth-sched', note: 'x' },
  'ScheduleService/UnpauseSchedule': { scheduleId: 'auth-sched', note: 'x' },
  'ScheduleService/TriggerSchedule': { scheduleId: 'auth-sched' },
  'ScheduleService/BackfillSchedule': { scheduleId: 'auth-sched', startTime: { seconds: 0n }, endTime: { seconds: 3600n } },
  'ScheduleService/DeleteSchedule': { scheduleId: 'auth-sched' },
});

const SERVICES = [RunService, SignalService, FlowService, WebhookService, AdminService, WorkerService, McpService, ScheduleService];
type Rpc = [name: string, service: DescService, method: DescMethod];
const rpcs: Rpc[] = SERVICES.flatMap((service) => service.methods.map((method): Rpc => [`${service.name}/${method.name}`, service, method]));

/** What a refusal must not carry: any credential, and team-a's data (for team-b callers). */
function leaks(err: ConnectError, forbidden: string[]): string[] {
  const text = [err.rawMessage, JSON.stringify(err.findDetails(ErrorInfoSchema)), ...[...err.metadata.entries()].map(([k, v]) => `${k}: ${v}`)].join('\n');
  return forbidden.filter((f) => f !== '' && text.includes(f));
}

async function expectRefused(err: ConnectError | null, code: Code, reason: string, forbidden: string[] = []): Promise<void> {
  expect(err, `expected ${Code[code]} ${reason}`).not.toBeNull();
  expect([Code[err!.code], err!.findDetails(ErrorInfoSchema)[0]?.reason]).toEqual([Code[code], reason]);
  expect(err!.findDetails(ErrorInfoSchema)[0]?.domain).toBe('waymark');
  expect(leaks(err!, [...Object.values(keys), streamToken, ...forbidden])).toEqual([]);
}

beforeAll(async () => {
  if (opensslAvailable) {
    certs = new TestCertificates();
    otherCa = new TestCertificates('Another CA');
    for (const name of ['a', 'aRead', 'revoked', 'unbound'] as const) cert[name] = certs.client(`client-${name}`);
    cert.foreign = otherCa.client('client-foreign');
  } else {
    console.warn('auth.test.ts: openssl is missing, so the server runs h2c and the client-certificate cases skip');
  }
  const server = certs?.server();
  s = await startApiServer({
    // A long key cache: the cache tests below count store reads over many calls on a loaded machine.
    prefix: 'waymark_auth', auth: { streamTokenSecret: SECRET, keyCacheMs: 600_000 },
    ...(certs && server ? { tls: { certFile: server.certFile, keyFile: server.keyFile, clientCaFile: certs.caFile, clientAuth: 'optional' } } : {}),
  });
  const k = s.deps.api.keys;
  keys.admin = (await k.create({ name: 'admin', namespace: null, scopes: [...SCOPES], createdByKeyId: null })).secret;
  keys.a = (await k.create({
    name: 'a', namespace: 'team-a', scopes: ['runs:read', 'runs:write', 'approvals:decide', 'signals:send'], createdByKeyId: null, clientCertSha256: cert.a?.fingerprint256,
  })).secret;
  keys.aRead = (await k.create({ name: 'a read', namespace: 'team-a', scopes: ['runs:read'], createdByKeyId: null, clientCertSha256: cert.aRead?.fingerprint256 })).secret;
  keys.b = (await k.create({ name: 'b', namespace: 'team-b', scopes: ['runs:read', 'runs:write', 'approvals:decide', 'signals:send'], createdByKeyId: null })).secret;
  const revoked = await k.create({
    name: 'gone', namespace: 'team-a', scopes: [...SCOPES.filter((x) => x !== 'admin')], createdByKeyId: null, clientCertSha256: cert.revoked?.fingerprint256,
  });
  keys.revoked = revoked.secret;
  revokedId = revoked.key.id;
  await k.revoke(revokedId);
  const runs = createClient(RunService, transport());
  const asA = { headers: bearer(keys.a) };
  const refund = await runs.startRun({ workflow: 'refund', input: json({ order: 'secret-order-a', amount: 5 }), wait: true }, asA);
  parked = refund.run!.id;
  approvalId = refund.waitingOn[0]!.approvalId;
  waiting = (await runs.startRun({ workflow: 'wait-signal', input: json({}), wait: true }, asA)).run!.id;
  otherApproval = (await runs.startRun({ workflow: 'refund', input: json({ order: 'o-b', amount: 1 }), wait: true }, { headers: bearer(keys.b) })).waitingOn[0]!.approvalId;
  streamToken = (await runs.createStreamToken({ runId: parked }, asA)).token;
  endpointId = (await createClient(WebhookService, transport()).createWebhookEndpoint({ namespace: 'team-a', url: 'https://hooks.example.com/a' }, { headers: bearer(keys.admin) })).endpoint!.id;
  // team-a's schedule, paused (no sweeper runs here, and a paused one would take no tick anyway).
  await createClient(ScheduleService, transport()).createSchedule({
    schedule: { id: 'auth-sched', spec: { cron: ['0 3 * * *'] }, action: { workflow: 'echo-flow', input: json({}) }, paused: true },
  }, asA);
}, TIMEOUT);

afterAll(async () => {
  await s?.close();
  certs?.remove();
  otherCa?.remove();
}, TIMEOUT);

describe('every RPC refuses bad credentials, writes nothing, leaks nothing', () => {
  it('covers every RPC of RunService, SignalService, FlowService, WebhookService, AdminService, WorkerService, McpService and ScheduleService', () => {
    expect(Object.keys(requests()).sort()).toEqual(rpcs.map((r) => r[0]).sort());
  });

  const expired = () => new StreamTokens({ secrets: [SECRET], now: () => Date.now() - 3_600_000 }).mint({ namespace: 'team-a', runId: parked, ttlMs: 60_000 }).token;
  const forged = () => new StreamTokens({ secrets: ['another-secret-that-is-32-characters-long'] }).mint({ namespace: 'team-a', runId: parked, ttlMs: 60_000 }).token;
  const otherRun = () => new StreamTokens({ secrets: [SECRET] }).mint({ namespace: 'team-a', runId: waiting, ttlMs: 60_000 }).token;
  const wrongSecret = () => `${keys.a.slice(0, 21)}${'A'.repeat(43)}`;

  const cases: [string, () => Record<string, string>, Code, string][] = [
    ['no key', () => ({}), Code.Unauthenticated, 'CREDENTIALS_MISSING'],
    ['an empty authorization header', () => ({ authorization: '' }), Code.Unauthenticated, 'CREDENTIALS_MISSING'],
    ['a Basic credential', () => ({ authorization: 'Basic dXNlcjpwYXNz' }), Code.Unauthenticated, 'CREDENTIALS_MALFORMED'],
    ['a malformed key', () => bearer('not-a-key'), Code.Unauthenticated, 'CREDENTIALS_MALFORMED'],
    ['a key with a truncated secret', () => bearer(keys.a.slice(0, -1)), Code.Unauthenticated, 'CREDENTIALS_MALFORMED'],
    ['a wrong key (unknown id)', () => bearer(`wmk_0123456789abcdef_${'x'.repeat(43)}`), Code.Unauthenticated, 'CREDENTIALS_INVALID'],
    ['a wrong key (known id, wrong secret)', () => bearer(wrongSecret()), Code.Unauthenticated, 'CREDENTIALS_INVALID'],
    ['a revoked key', () => bearer(keys.revoked), Code.Unauthenticated, 'KEY_REVOKED'],
    ['an expired stream token', () => bearer(expired()), Code.Unauthenticated, 'TOKEN_EXPIRED'],
    ['a stream token signed with another secret', () => bearer(forged()), Code.Unauthenticated, 'CREDENTIALS_INVALID'],
  ];

  for (const [what, headers, code, reason] of cases) {
    it.each(rpcs)(`${what}: %s`, { timeout: TIMEOUT }, async (name, service, method) => {
      const before = await s.rowCounts();
      await expectRefused(await call(service, method, requests()[name]!, headers()), code, reason, [wrongSecret()]);
      expect(await s.rowCounts()).toEqual(before);
    });
  }

  // mTLS without an authorization header: the certificate is the credential.
  const certificateCases: [string, () => Issued, Code, string][] = [
    ['a CA-valid client certificate bound to no key', () => cert.unbound!, Code.Unauthenticated, 'CERTIFICATE_NOT_BOUND'],
    ["the client certificate of a revoked key", () => cert.revoked!, Code.Unauthenticated, 'KEY_REVOKED'],
    ['a client certificate of another CA (not verified, so no credential)', () => cert.foreign!, Code.Unauthenticated, 'CREDENTIALS_MISSING'],
  ];
  for (const [what, certificate, code, reason] of certificateCases) {
    it.skipIf(!opensslAvailable).each(rpcs)(`${what}, no key: %s`, { timeout: TIMEOUT }, async (name, service, method) => {
      const before = await s.rowCounts();
      await expectRefused(await call(service, method, requests()[name]!, {}, certificate()), code, reason, [wrongSecret()]);
      expect(await s.rowCounts()).toEqual(before);
    });
  }

  it.each(rpcs.filter((r) => r[1] !== AdminService))('a key of another namespace naming team-a: NOT_FOUND whatever the resource: %s', { timeout: TIMEOUT }, async (name, service, method) => {
    const before = await s.rowCounts();
    const err = await call(service, method, { ...requests()[name]!, namespace: 'team-a' }, bearer(keys.b));
    await expectRefused(err, Code.NotFound, 'NAMESPACE_NOT_FOUND', ['secret-order-a', 'Refund']);
    // The same answer for a namespace that does not exist: no oracle.
    const none = await call(service, method, { ...requests()[name]!, namespace: 'team-none' }, bearer(keys.b));
    expect(none?.rawMessage.replace('team-none', 'team-a')).toBe(err!.rawMessage);
    expect(await s.rowCounts()).toEqual(before);
  });

  const addressing = rpcs.filter((r) => ['runId', 'id'].some((f) => f in requests()[r[0]]!) && r[1] !== AdminService);
  it.each(addressing)('a key of another namespace addressing team-a\'s run or approval: the NOT_FOUND of an unknown one: %s', { timeout: TIMEOUT }, async (name, service, method) => {
    const before = await s.rowCounts();
    const request = requests()[name]!;
    const err = await call(service, method, request, bearer(keys.b));
    const reason = 'id' in request ? 'APPROVAL_NOT_FOUND' : 'RUN_NOT_FOUND';
    await expectRefused(err, Code.NotFound, reason, ['secret-order-a', 'Refund']);
    // Exactly what a run that exists nowhere gets (its id aside).
    const unknown = 'id' in request ? { ...request, id: `${UNKNOWN_RUN}:1` } : { ...request, runId: UNKNOWN_RUN };
    const nowhere = await call(service, method, unknown, bearer(keys.b));
    expect(nowhere?.rawMessage.replaceAll(UNKNOWN_RUN, 'X')).toBe(err!.rawMessage.replaceAll('id' in request ? approvalId.split(':')[0]! : (request as { runId: string }).runId, 'X'));
    expect(await s.rowCounts()).toEqual(before);
  });

  it('a key of another namespace listing sees only its own namespace', async () => {
    const runs = createClient(RunService, transport());
    const listed = await runs.listRuns({}, { headers: bearer(keys.b) });
    expect(listed.runs.map((r) => r.namespace)).toEqual(listed.runs.map(() => 'team-b'));
    expect(listed.runs.some((r) => r.id === parked)).toBe(false);
    const approvals = await createClient(SignalService, transport()).listApprovals({}, { headers: bearer(keys.b) });
    expect(approvals.approvals.map((a) => a.id)).toEqual([otherApproval]);
  });

  const writes = rpcs.filter((r) => scopeOf(r[0]) !== 'runs:read');
  it.each(writes)('a read-only key: PERMISSION_DENIED on a visible resource, nothing written: %s', { timeout: TIMEOUT }, async (name, service, method) => {
    const before = await s.rowCounts();
    await expectRefused(await call(service, method, requests()[name]!, bearer(keys.aRead)), Code.PermissionDenied, 'SCOPE_MISSING');
    expect(await s.rowCounts()).toEqual(before);
  });

  it('a read-only key deciding another namespace\'s approval is NOT_FOUND, not PERMISSION_DENIED', async () => {
    const before = await s.rowCounts();
    const err = await call(SignalService, SignalService.method.decideApproval, { id: otherApproval, approve: true, by: 'mallory' }, bearer(keys.aRead));
    await expectRefused(err, Code.NotFound, 'APPROVAL_NOT_FOUND');
    expect(await s.rowCounts()).toEqual(before);
  });

  it.each(rpcs.filter((r) => r[0] !== 'RunService/StreamRunEvents' && r[0] !== 'RunService/GetRun'))('a stream token calling %s: PERMISSION_DENIED', { timeout: TIMEOUT }, async (name, service, method) => {
    const before = await s.rowCounts();
    await expectRefused(await call(service, method, requests()[name]!, bearer(streamToken)), Code.PermissionDenied, 'TOKEN_SCOPE');
    expect(await s.rowCounts()).toEqual(before);
  });

  it('a stream token on another run, or naming another namespace, is PERMISSION_DENIED; on its own run it streams', async () => {
    for (const method of [RunService.method.streamRunEvents, RunService.method.getRun]) {
      await expectRefused(await call(RunService, method, { runId: waiting }, bearer(streamToken)), Code.PermissionDenied, 'TOKEN_SCOPE');
      await expectRefused(await call(RunService, method, { runId: parked, namespace: 'team-b' }, bearer(streamToken)), Code.PermissionDenied, 'TOKEN_SCOPE');
      // A token for another run of the same namespace reads that run only.
      await expectRefused(await call(RunService, method, { runId: parked }, bearer(otherRun())), Code.PermissionDenied, 'TOKEN_SCOPE');
    }
    const runs = createClient(RunService, transport());
    const events = [];
    for await (const e of runs.streamRunEvents({ runId: parked }, { headers: bearer(streamToken) })) events.push(e);
    expect(events.length).toBeGreaterThan(0);
    expect((await runs.getRun({ runId: parked }, { headers: bearer(streamToken) })).run?.id).toBe(parked);
  });

  it('a stream opened with a stream token ends with UNAUTHENTICATED (TOKEN_EXPIRED) when the token expires, and gives its slot back', { timeout: TIMEOUT }, async () => {
    // The parked run never ends by itself: without the expiry, this stream would follow it forever.
    const shortLived = new StreamTokens({ secrets: [SECRET] }).mint({ namespace: 'team-a', runId: parked, ttlMs: 1_500 }).token;
    const slotsBefore = s.deps.streams.open;
    const runs = createClient(RunService, transport());
    const events: unknown[] = [];
    const ended = (async () => {
      try {
        for await (const e of runs.streamRunEvents({ runId: parked, followSuspended: true }, { headers: bearer(shortLived) })) events.push(e);
        return null;
      } catch (err) {
        return ConnectError.from(err);
      }
    })();
    let bound: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([ended, new Promise<'still open'>((resolve) => (bound = setTimeout(() => resolve('still open'), 60_000)))]);
    clearTimeout(bound);
    expect(outcome, 'the stream must end when its token expires').not.toBe('still open');
    await expectRefused(outcome as ConnectError | null, Code.Unauthenticated, 'TOKEN_EXPIRED', [shortLived]);
    expect(events.length, 'the history was streamed before the expiry').toBeGreaterThan(0);
    await until('the stream slot to be given back', () => (s.deps.streams.open === slotsBefore ? true : undefined));
  });

  it('health checks need no key; reflection needs one', async () => {
    expect(await call(Health, Health.method.check, {}, {})).toBeNull();
    const { ServerReflection } = await import('../../src/gen/grpc/reflection/v1/reflection_pb.js');
    const reflect = async (headers: Record<string, string>) => {
      const client = createClient(ServerReflection, transport());
      async function* one() { yield { listServices: '' } as never; }
      try {
        for await (const _ of client.serverReflectionInfo(one(), { headers })) break;
        return null;
      } catch (err) {
        return ConnectError.from(err);
      }
    };
    await expectRefused(await reflect({}), Code.Unauthenticated, 'CREDENTIALS_MISSING');
    await expectRefused(await reflect(bearer(streamToken)), Code.PermissionDenied, 'TOKEN_SCOPE');
    expect(await reflect(bearer(keys.aRead))).toBeNull();
  });
});

function scopeOf(name: string): string {
  const rule = (ACCESS as Record<string, unknown>)[`waymark.v1.${name}`] as { scope: string };
  return rule.scope;
}
describe('keys and namespaces', () => {
  it('a namespaced key works in its namespace, with or without naming it; a decision records its key id', async () => {
    const runs = createClient(RunService, transport());
    const signals = createClient(SignalService, transport());
    const started = await runs.startRun({ workflow: 'refund', input: json({ order: 'o-2', amount: 2 }), wait: true, namespace: 'team-a' }, { headers: bearer(keys.a) });
    expect(started.run?.namespace).toBe('team-a');
    const id = started.waitingOn[0]!.approvalId;
    const keyId = keys.a.split('_')[1]!;
    const decided = await signals.decideApproval({ id, approve: false, by: 'ann' }, { headers: bearer(keys.a) });
    expect(decided.approval?.decidedByKeyId).toBe(keyId);
    expect((await signals.getApproval({ id }, { headers: bearer(keys.aRead) })).approval?.decidedByKeyId).toBe(keyId);
    const { rows } = await s.db.admin.query<{ payload: { keyId?: string; by?: string } }>(
      "SELECT payload FROM journal WHERE run_id = $1 AND status = 'resolved' AND kind = 'approval'", [started.run!.id]);
    expect(rows.map((r) => [r.payload.by, r.payload.keyId])).toEqual([['ann', keyId]]);
  });

  it('an admin key addresses any namespace; its empty namespace is "default"', async () => {
    const runs = createClient(RunService, transport());
    expect((await runs.getRun({ runId: parked, namespace: 'team-a' }, { headers: bearer(keys.admin) })).run?.id).toBe(parked);
    await expectRefused(await call(RunService, RunService.method.getRun, { runId: parked }, bearer(keys.admin)), Code.NotFound, 'RUN_NOT_FOUND');
  });

  it('AdminService: create (secret once), list (no secrets), revoke (refused at once on this replica); namespaced keys may not administer', async () => {
    const admin = createClient(AdminService, transport());
    const asAdmin = { headers: bearer(keys.admin) };
    const created = await admin.createKey({ name: 'ci', namespace: 'team-c', scopes: ['runs:read', 'runs:write'] }, asAdmin);
    expect(created.secret).toMatch(/^wmk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    expect(created.key).toMatchObject({ name: 'ci', namespace: 'team-c', scopes: ['runs:read', 'runs:write'], createdByKeyId: keys.admin.split('_')[1] });
    const listed = await admin.listKeys({ namespace: 'team-c' }, asAdmin);
    expect(listed.keys.map((k) => k.id)).toEqual([created.key!.id]);
    expect(toJsonString(ListKeysResponseSchema, listed)).not.toContain(created.secret.slice(22));
    const runs = createClient(RunService, transport());
    expect((await runs.listRuns({}, { headers: bearer(created.secret) })).runs).toEqual([]);
    const revoked = await admin.revokeKey({ id: created.key!.id }, asAdmin);
    expect(revoked.key?.revokeTime).toBeDefined();
    await expectRefused(await call(RunService, RunService.method.listRuns, {}, bearer(created.secret)), Code.Unauthenticated, 'KEY_REVOKED');
    expect((await admin.listKeys({ namespace: 'team-c' }, asAdmin)).keys).toEqual([]);
    expect((await admin.listKeys({ namespace: 'team-c', includeRevoked: true }, asAdmin)).keys).toHaveLength(1);
    // Refusals of the admin RPCs' own validation.
    const bad = await call(AdminService, AdminService.method.createKey, { namespace: 'team-c', scopes: ['admin', 'runs:nope'] }, bearer(keys.admin));
    expect(bad?.code).toBe(Code.InvalidArgument);
    await expectRefused(await call(AdminService, AdminService.method.revokeKey, { id: '00000000000000ff' }, bearer(keys.admin)), Code.NotFound, 'KEY_NOT_FOUND');
    await expectRefused(await call(AdminService, AdminService.method.listKeys, {}, bearer(keys.a)), Code.PermissionDenied, 'SCOPE_MISSING');
  });

  it('a verified key is served from the cache: no store read per request', async () => {
    const runs = createClient(RunService, transport());
    await runs.listRuns({}, { headers: bearer(keys.aRead) });
    const reads = s.deps.api.keys.storeReads;
    for (let i = 0; i < 50; i++) await runs.listRuns({}, { headers: bearer(keys.aRead) });
    expect(s.deps.api.keys.storeReads).toBe(reads);
  });

  it('CreateStreamToken: another namespace\'s run is NOT_FOUND; ttl is bounded', async () => {
    await expectRefused(await call(RunService, RunService.method.createStreamToken, { runId: parked }, bearer(keys.b)), Code.NotFound, 'RUN_NOT_FOUND');
    const tooLong = await call(RunService, RunService.method.createStreamToken, { runId: parked, ttl: durationFromMs(2 * 3_600_000) }, bearer(keys.a));
    expect(tooLong?.code).toBe(Code.InvalidArgument);
  });
});

describe.skipIf(!opensslAvailable)('mTLS client certificates bound to keys', () => {
  const keyId = (secret: string) => secret.split('_')[1]!;
  /** Waits for a run to end, so the rows it writes are in before the next row count. */
  const finished = (runId: string) => until(`run ${runId} ended`, async () => {
    const { run } = await createClient(RunService, transport()).getRun({ runId, namespace: 'team-a' }, { headers: bearer(keys.admin) });
    return [RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED].includes(run!.status) ? run : undefined;
  });

  it('a bound certificate authenticates as its key without a bearer header: its namespace, its scopes, its key id on a decision', async () => {
    // The read-only key's certificate reads team-a, is PERMISSION_DENIED on a write and NOT_FOUND elsewhere.
    expect(await call(RunService, RunService.method.getRun, { runId: parked }, {}, cert.aRead)).toBeNull();
    const before = await s.rowCounts();
    await expectRefused(await call(SignalService, SignalService.method.decideApproval, { id: approvalId, approve: true, by: 'x' }, {}, cert.aRead), Code.PermissionDenied, 'SCOPE_MISSING');
    await expectRefused(await call(RunService, RunService.method.getRun, { runId: parked, namespace: 'team-b' }, {}, cert.aRead), Code.NotFound, 'NAMESPACE_NOT_FOUND');
    expect(await s.rowCounts()).toEqual(before);
    // The writing key's certificate starts and decides in team-a; the decision records that key.
    const runs = createClient(RunService, transport(cert.a));
    const started = await runs.startRun({ workflow: 'refund', input: json({ order: 'o-cert', amount: 3 }), wait: true });
    expect(started.run?.namespace).toBe('team-a');
    const decided = await createClient(SignalService, transport(cert.a)).decideApproval({ id: started.waitingOn[0]!.approvalId, approve: false, by: 'cat' });
    expect(decided.approval?.decidedByKeyId).toBe(keyId(keys.a));
    await finished(started.run!.id);
  });

  it('a bearer key alongside a certificate decides who calls', async () => {
    // An unbound certificate does not get in the way of a good key.
    expect(await call(RunService, RunService.method.listRuns, {}, bearer(keys.aRead), cert.unbound)).toBeNull();
    // The read-only key's certificate with the writing key's bearer writes.
    const echo = await createClient(RunService, transport(cert.aRead)).startRun({ workflow: 'echo-flow', input: json({}), wait: true }, { headers: bearer(keys.a) });
    await finished(echo.run!.id);
    // A bad bearer is refused even with a good certificate (no falling back to it).
    await expectRefused(await call(RunService, RunService.method.listRuns, {}, bearer(keys.revoked), cert.a), Code.Unauthenticated, 'KEY_REVOKED');
    await expectRefused(await call(RunService, RunService.method.listRuns, {}, bearer('not-a-key'), cert.a), Code.Unauthenticated, 'CREDENTIALS_MALFORMED');
  });

  it('CreateKey binds a certificate (colons and upper case accepted) that ListKeys shows; the same certificate again is ALREADY_EXISTS; RevokeKey refuses it at once', async () => {
    const admin = createClient(AdminService, transport());
    const asAdmin = { headers: bearer(keys.admin) };
    const fresh = certs!.client('client-fresh');
    const spelled = fresh.fingerprint256.toUpperCase().match(/../g)!.join(':');
    const created = await admin.createKey({ name: 'by certificate', namespace: 'team-m', scopes: ['runs:read'], clientCertSha256: spelled }, asAdmin);
    expect(created.key?.clientCertSha256).toBe(fresh.fingerprint256);
    expect((await admin.listKeys({ namespace: 'team-m' }, asAdmin)).keys.map((k) => [k.id, k.clientCertSha256])).toEqual([[created.key!.id, fresh.fingerprint256]]);
    expect(await call(RunService, RunService.method.listRuns, {}, {}, fresh)).toBeNull();

    const before = await s.rowCounts();
    const again = await call(AdminService, AdminService.method.createKey, { namespace: 'team-n', scopes: ['runs:read'], clientCertSha256: fresh.fingerprint256 }, bearer(keys.admin));
    await expectRefused(again, Code.AlreadyExists, 'CLIENT_CERT_TAKEN');
    const malformed = await call(AdminService, AdminService.method.createKey, { namespace: 'team-n', scopes: ['runs:read'], clientCertSha256: 'abc' }, bearer(keys.admin));
    expect(malformed?.code).toBe(Code.InvalidArgument);
    expect(await s.rowCounts()).toEqual(before);

    await admin.revokeKey({ id: created.key!.id }, asAdmin);
    await expectRefused(await call(RunService, RunService.method.listRuns, {}, {}, fresh), Code.Unauthenticated, 'KEY_REVOKED');
  });

  it('a verified certificate is served from the cache: no store read per request', async () => {
    await call(RunService, RunService.method.listRuns, {}, {}, cert.aRead);
    const reads = s.deps.api.keys.storeReads;
    const runs = createClient(RunService, transport(cert.aRead));
    for (let i = 0; i < 50; i++) await runs.listRuns({});
    expect(s.deps.api.keys.storeReads).toBe(reads);
  });
});
