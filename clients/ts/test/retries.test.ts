import { create } from '@bufbuild/protobuf';
import { durationFromMs } from '@bufbuild/protobuf/wkt';
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ErrorInfoSchema, RetryInfoSchema } from '../src/gen/google/rpc/error_details_pb.js';
import { Health, HealthCheckResponse_ServingStatus } from '../src/gen/grpc/health/v1/health_pb.js';
import {
  AlreadyResolved, ApprovalSchema, ApprovalState, createWaymarkClient, connectWaymarkClient, EntryStatus, JournalEntrySchema, RunSchema, RunService, RunStatus,
  SignalService, Unavailable, WaymarkError, type ClientOptions,
} from '../src/index.js';

// The retry policy of docs/clients.md, call by call, against a scripted Connect server on
// loopback (real HTTP/2): each RPC answers from a script (a response, a status, or a dropped
// connection), and the test reads which requests arrived.

type Step = 'drop' | 'hang' | ConnectError | object;

class Scripted {
  readonly calls = new Map<string, unknown[]>();
  private readonly scripts = new Map<string, Step[]>();
  private server: http2.Http2Server | http2.Http2SecureServer | undefined;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  address = '';

  script(method: string, ...steps: Step[]): this {
    this.scripts.set(method, steps);
    return this;
  }

  requests(method: string): unknown[] {
    return this.calls.get(method) ?? [];
  }

  private async answer(method: string, req: unknown): Promise<object> {
    const seen = this.calls.get(method) ?? [];
    seen.push(req);
    this.calls.set(method, seen);
    const steps = this.scripts.get(method) ?? [];
    const step = steps.length > 1 ? steps.shift()! : steps[0];
    if (step === undefined) throw new ConnectError(`no script for ${method}`, Code.Unimplemented);
    if (step === 'drop') {
      for (const s of this.sessions) s.destroy();
      return new Promise(() => undefined);
    }
    if (step === 'hang') return new Promise(() => undefined);
    if (step instanceof ConnectError) throw step;
    return step;
  }

  private routes = (router: ConnectRouter): void => {
    const handlers = (service: typeof RunService | typeof SignalService | typeof Health) =>
      Object.fromEntries(service.methods.filter((m) => m.methodKind === 'unary').map((m) => [m.localName, (req: unknown) => this.answer(m.localName, req)]));
    router.service(RunService, handlers(RunService));
    router.service(SignalService, handlers(SignalService));
    router.service(Health, handlers(Health));
  };

  async start(tls?: { key: string; cert: string }): Promise<this> {
    const handler = connectNodeAdapter({ routes: this.routes });
    const server = tls ? http2.createSecureServer({ ...tls, allowHTTP1: false }, handler) : http2.createServer(handler);
    server.on('session', (s) => {
      this.sessions.add(s);
      s.once('close', () => this.sessions.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sessions) s.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

const servers: Scripted[] = [];
const clients: { close(): void }[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function scripted(tls?: { key: string; cert: string }): Promise<Scripted> {
  const s = await new Scripted().start(tls);
  servers.push(s);
  return s;
}

function clientOf(server: Scripted, options: ClientOptions = {}) {
  const client = createWaymarkClient({ address: server.address, retry: { initialMs: 5, maxMs: 20 }, ...options });
  clients.push(client);
  return client;
}

const unavailable = () => new ConnectError('draining', Code.Unavailable);
const run = (status = RunStatus.RUNNING) => create(RunSchema, { id: '01900000-0000-7000-8000-000000000001', status, nextSeq: 3n });
const wrongState = (status: string) => new ConnectError('wrong state', Code.FailedPrecondition, undefined, [
  { desc: ErrorInfoSchema, value: { reason: 'WRONG_STATE', domain: 'waymark', metadata: { status } } },
]);

describe('unary retries', () => {
  it('retries a read on UNAVAILABLE and on a dropped connection, then returns the answer', async () => {
    const server = (await scripted()).script('getRun', unavailable(), 'drop', { run: run() });
    const { run: got } = await clientOf(server).getRun('r');
    expect(got.status).toBe(RunStatus.RUNNING);
    expect(server.requests('getRun')).toHaveLength(3);
  });

  it('never retries NOT_FOUND, FAILED_PRECONDITION, INTERNAL or RESOURCE_EXHAUSTED without RetryInfo', async () => {
    for (const code of [Code.NotFound, Code.FailedPrecondition, Code.Internal, Code.ResourceExhausted, Code.InvalidArgument, Code.DeadlineExceeded]) {
      const server = (await scripted()).script('getRun', new ConnectError('no', code), { run: run() });
      const err = await clientOf(server).getRun('r').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WaymarkError);
      expect((err as WaymarkError).code).toBe(code);
      expect(server.requests('getRun'), Code[code]).toHaveLength(1);
    }
  });

  it('retries RESOURCE_EXHAUSTED with RetryInfo, waiting at least its delay', async () => {
    const limited = new ConnectError('busy', Code.ResourceExhausted, undefined, [{ desc: RetryInfoSchema, value: { retryDelay: durationFromMs(300) } }]);
    const server = (await scripted()).script('listWorkflows', limited, { workflows: [] });
    const started = Date.now();
    await clientOf(server).listWorkflows();
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    expect(server.requests('listWorkflows')).toHaveLength(2);
  });

  it('gives up when the budget is spent, with a typed Unavailable', async () => {
    const server = (await scripted()).script('getRun', unavailable());
    const err = await clientOf(server, { retry: { initialMs: 5, maxMs: 20, budgetMs: 200 } }).getRun('r').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Unavailable);
    expect((err as Unavailable).kind).toBe('status');
    expect(server.requests('getRun').length).toBeGreaterThan(1);
  });

  it('reports a refused connection as Unavailable the server never saw, after retrying', async () => {
    const server = await scripted();
    const address = server.address;
    await server.stop();
    const err = await createWaymarkClient({ address, retry: { initialMs: 5, maxMs: 20, budgetMs: 100 } }).getRun('r').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Unavailable);
    expect((err as Unavailable).kind).toBe('not_sent');
  });

  it('bounds all attempts by the call\'s timeoutMs, and rejects with the reason of an aborted signal', async () => {
    const server = (await scripted()).script('getRun', 'hang');
    const client = clientOf(server);
    const late = await client.getRun('r', { timeoutMs: 100 }).catch((e: unknown) => e);
    expect((late as WaymarkError).code).toBe(Code.DeadlineExceeded);
    const controller = new AbortController();
    const pending = client.getRun('r', { signal: controller.signal }).catch((e: unknown) => e);
    const reason = new Error('user went away');
    controller.abort(reason);
    expect(await pending).toBe(reason);
  });

  it('makes StartRun safe to retry with one generated idempotency key per call, and reports it created', async () => {
    const server = (await scripted()).script('startRun', 'drop', { run: run(), created: false });
    const started = await clientOf(server).startRun('refund', { order: 'o' });
    const keys = server.requests('startRun').map((r) => (r as { idempotencyKey: string }).idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(/^client:[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(started.created).toBe(true);
  });

  it('makes ForkRun safe to retry with one generated key per call, and retries a fork preview and a comparison as reads', async () => {
    const server = (await scripted()).script('forkRun', 'drop', { run: run(), created: false, forkSeq: 4n });
    const client = clientOf(server);
    const forked = await client.fork(run().id, 4, { decision: 'deny', model: 'openai:gpt-5-mini' });
    const requests = server.requests('forkRun') as { idempotencyKey: string; dryRun: boolean; atSeq: bigint; model: string; decision?: { approve: boolean } }[];
    expect(requests).toHaveLength(2);
    expect(requests[0]!.idempotencyKey).toMatch(/^client:[0-9a-f-]{36}$/);
    expect(requests[1]!.idempotencyKey).toBe(requests[0]!.idempotencyKey);
    expect(requests[0]).toMatchObject({ atSeq: 4n, dryRun: false, model: 'openai:gpt-5-mini', decision: { approve: false } });
    // The retry found the fork its first attempt made: created, as the caller sees it.
    expect(forked).toMatchObject({ created: true, forkSeq: 4n });

    const previews = (await scripted()).script('forkRun', unavailable(), { preview: { forkSeq: 4n, kept: 4 } });
    const preview = await clientOf(previews).previewFork(run().id, 4);
    expect(preview.forkSeq).toBe(4n);
    expect((previews.requests('forkRun') as { dryRun: boolean }[]).map((r) => r.dryRun)).toEqual([true, true]);

    const compares = (await scripted()).script('compareRuns', 'drop', { forkSeq: 4n });
    expect((await clientOf(compares).compareRuns('a', 'b')).forkSeq).toBe(4n);
    expect(compares.requests('compareRuns')).toHaveLength(2);
  });

  it('never retries a refused fork, and throws it typed with its reason', async () => {
    const refused = new ConnectError('fork point past the journal', Code.InvalidArgument, undefined, [
      { desc: ErrorInfoSchema, value: { reason: 'INVALID_FORK', domain: 'waymark', metadata: {} } },
    ]);
    const server = (await scripted()).script('forkRun', refused);
    const err = await clientOf(server).fork(run().id, 99).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WaymarkError);
    expect((err as WaymarkError).reason).toBe('INVALID_FORK');
    expect(server.requests('forkRun')).toHaveLength(1);
  });

  it('sends one generated signal id and request id across the attempts of a call', async () => {
    const approval = create(ApprovalSchema, { id: 'a:1', state: ApprovalState.APPROVED, decidedBy: 'ana' });
    const server = (await scripted())
      .script('sendSignal', unavailable(), { applied: true, seq: 4n })
      .script('decideApproval', 'drop', { approval, applied: true });
    const client = clientOf(server);
    await client.sendSignal('r', 'go', {});
    await client.approve('a:1', { by: 'ana' });
    const ids = server.requests('sendSignal').map((r) => (r as { signalId: string }).signalId);
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(ids[0]);
    const requestIds = server.requests('decideApproval').map((r) => (r as { requestId: string }).requestId);
    expect(requestIds).toHaveLength(2);
    expect(requestIds[1]).toBe(requestIds[0]);
  });

  it('answers a duplicate decision with the first one\'s outcome: applied when it won, AlreadyResolved when it lost', async () => {
    const won = create(ApprovalSchema, { id: 'a:1', state: ApprovalState.APPROVED, decidedBy: 'ana' });
    const lost = create(ApprovalSchema, { id: 'a:1', state: ApprovalState.DENIED, decidedBy: 'bob' });
    const server = (await scripted()).script('decideApproval', { approval: won, applied: false, reason: 'duplicate' }, { approval: lost, applied: false, reason: 'duplicate' });
    const client = clientOf(server);
    expect(await client.approve('a:1', { by: 'ana', requestId: 'req-1' })).toMatchObject({ applied: true, reason: 'duplicate' });
    expect(await client.approve('a:1', { by: 'ana', requestId: 'req-1' }).catch((e: unknown) => e)).toBeInstanceOf(AlreadyResolved);
  });

  it('answers a duplicate signal with the first delivery\'s outcome, read from its journal entry', async () => {
    const server = (await scripted())
      .script('sendSignal', { applied: false, reason: 'duplicate', seq: 5n })
      .script('getJournal', { entries: [create(JournalEntrySchema, { seq: 5n, status: EntryStatus.RESOLVED })] }, { entries: [create(JournalEntrySchema, { seq: 5n, status: EntryStatus.NOOP })] });
    const client = clientOf(server);
    expect(await client.sendSignal('r', 'go', {}, { signalId: 's-1' })).toMatchObject({ applied: true, reason: 'duplicate' });
    expect(await client.sendSignal('r', 'go', {}, { signalId: 's-1' }).catch((e: unknown) => e)).toBeInstanceOf(AlreadyResolved);
    expect(server.requests('getJournal')[0]).toMatchObject({ afterSeq: 4n, pageSize: 1 });
  });

  it('retries a resume with invalidate only when the server never saw it', async () => {
    const server = (await scripted()).script('resumeRun', unavailable(), { run: run() });
    const err = await clientOf(server).resume('r', { invalidate: [2n] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Unavailable);
    expect(server.requests('resumeRun')).toHaveLength(1);
  });

  it('takes WRONG_STATE RUNNING on a retried plain resume as the earlier attempt applied', async () => {
    const server = (await scripted()).script('resumeRun', 'drop', wrongState('RUNNING')).script('getRun', { run: run() });
    const resumed = await clientOf(server).resume('r');
    expect(resumed.run.status).toBe(RunStatus.RUNNING);
    expect(server.requests('resumeRun')).toHaveLength(2);
    // The same answer to a first attempt is the caller's error.
    const first = (await scripted()).script('resumeRun', wrongState('RUNNING'));
    expect(await clientOf(first).resume('r').catch((e: unknown) => e)).toMatchObject({ name: 'WrongState' });
  });
});

describe('readiness', () => {
  it('fails fast with Unavailable when nothing listens, and when the server is not serving', async () => {
    const server = (await scripted()).script('check', { status: HealthCheckResponse_ServingStatus.NOT_SERVING });
    expect(await clientOf(server).ready().catch((e: unknown) => e)).toBeInstanceOf(Unavailable);
    const address = server.address;
    await server.stop();
    expect(await connectWaymarkClient({ address }).catch((e: unknown) => e)).toMatchObject({ name: 'Unavailable', kind: 'not_sent' });
  });

  it('waits for a server that starts serving', async () => {
    const server = (await scripted()).script('check', { status: HealthCheckResponse_ServingStatus.NOT_SERVING }, { status: HealthCheckResponse_ServingStatus.SERVING });
    const client = await connectWaymarkClient({ address: server.address, retry: { initialMs: 5, maxMs: 20 }, ready: { wait: true } });
    clients.push(client);
    expect(server.requests('check')).toHaveLength(2);
  });
});

describe('TLS with a CA of its own', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waymark-ts-tls-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('trusts the CA given as PEM (no NODE_EXTRA_CA_CERTS), and refuses a server it does not vouch for', async () => {
    const file = (name: string) => path.join(dir, name);
    const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=waymark test CA', '-keyout', file('ca.key'), '-out', file('ca.pem'));
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-keyout', file('server.key'), '-out', file('server.csr'));
    writeFileSync(file('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
    openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-days', '1', '-extfile', file('ext.cnf'), '-out', file('server.pem'));
    const server = (await scripted({ key: readFileSync(file('server.key'), 'utf8'), cert: readFileSync(file('server.pem'), 'utf8') })).script('listWorkflows', { workflows: [] });

    expect(await clientOf(server, { tls: { ca: readFileSync(file('ca.pem'), 'utf8') } }).listWorkflows()).toEqual([]);
    const untrusted = await clientOf(server, { tls: true, retry: { budgetMs: 0 } }).listWorkflows().catch((e: unknown) => e);
    expect(untrusted).toBeInstanceOf(WaymarkError);
    expect(server.requests('listWorkflows')).toHaveLength(1);
  });
});
