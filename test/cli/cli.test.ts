import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { Code, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { localToken } from '../../src/cli/client/local-token.js';
import { tmpdir } from 'node:os';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HealthCheckResponse_ServingStatus, Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { grpcJsClient, unaryCall } from '../server/grpc-js-client.js';

describe('waymark command', () => {
  it('prints help', async () => {
    const p = WaymarkProcess.start(['--help']);
    const { code } = await p.exited;
    expect(code).toBe(0);
    expect(p.logs.map((l) => l.msg).join('\n')).toContain('waymark dev');
  });

  it.each([
    ['WAYMARK_ADDR', 'nonsense', 'must be host:port'],
    ['WAYMARK_LEASE_TTL_MS', 'soon', 'whole number of milliseconds'],
    ['WAYMARK_EXECUTOR_CONCURRENCY', '0', 'whole number > 0'],
    ['WAYMARK_APPENDS_IN_FLIGHT', '-1', 'whole number >= 0'],
    ['WAYMARK_RESUME_CACHE_ENTRIES', '-1', 'whole number >= 0'],
    ['WAYMARK_RESUME_CACHE_BYTES', '1.5', 'whole number of bytes >= 0'],
    ['DATABASE_URL', 'mysql://root:secret@db/x', 'postgres:// URL'],
    ['WAYMARK_TLS_KEY_FILE', '/nonexistent/tls.key', 'invalid setting WAYMARK_TLS_CERT_FILE="": must be set with WAYMARK_TLS_KEY_FILE'],
    ['WAYMARK_TLS_CLIENT_CA_FILE', '/nonexistent/ca.pem', 'needs WAYMARK_TLS_CERT_FILE'],
    ['WAYMARK_TLS_CLIENT_AUTH', 'maybe', 'must be require or optional'],
    ['WAYMARK_HEALTH_ADDR', 'nowhere', 'must be host:port'],
    ['WAYMARK_WEBHOOK_ALLOW_PRIVATE', 'yes', 'must be true or false'],
    ['WAYMARK_SECRETS_KEYS', 'k1:c2VjcmV0', 'must be 32 bytes in base64'],
    ['WAYMARK_WEBHOOK_CLAIM_TTL_MS', '5000', 'must exceed WAYMARK_WEBHOOK_TIMEOUT_MS (10000)'],
    ['WAYMARK_CLIENT_MAX_BUFFERED_BYTES', '0', 'whole number of bytes > 0'],
    ['WAYMARK_MAX_JOURNAL_BYTES', '0', 'whole number of bytes > 0'],
    ['WAYMARK_AUTH', 'maybe', 'must be on or off'],
    ['WAYMARK_AUTH_CACHE_MS', '0', 'whole number of milliseconds > 0'],
    ['WAYMARK_STREAM_TOKEN_SECRET', 'short', 'of at least 32 characters'],
    ['WAYMARK_CORS_ORIGINS', 'app.example.com', 'origins like https://'],
    ['WAYMARK_REFLECTION_PUBLIC', 'yes', 'must be true or false'],
  ])('refuses %s=%s with one line naming the variable, exit 78', async (variable, value, expected) => {
    const p = WaymarkProcess.start(['server'], { env: { [variable]: value } });
    const { code } = await p.exited;
    expect(code).toBe(78);
    const lines = p.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(variable);
    expect(lines[0]).toContain(expected);
    expect(p.stderr).not.toContain('secret'); // a database URL's password is never echoed
  });

  it('refuses WAYMARK_AUTH=off on an address other machines can reach, exit 78', async () => {
    const p = WaymarkProcess.start(['server'], { env: { WAYMARK_AUTH: 'off', WAYMARK_ADDR: '0.0.0.0:0' } });
    expect((await p.exited).code).toBe(78);
    const lines = p.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('WAYMARK_AUTH');
    expect(lines[0]).toContain('loopback');
  });

  it('refuses bad model settings with exit 78 before touching the database', async () => {
    // Nothing listens on port 1: opening the database first would fail differently (exit 1).
    const p = WaymarkProcess.start(['server'], { env: { WAYMARK_MODELS: '{bad', DATABASE_URL: 'postgres://u:secret@127.0.0.1:1/none' } });
    const { code } = await p.exited;
    expect(code).toBe(78);
    const lines = p.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('WAYMARK_MODELS');
    expect(p.stderr).not.toContain('secret');
    expect(p.logs.some((l) => /migrat|PostgreSQL|listening/.test(String(l.msg)))).toBe(false);
  });

  it('rejects an unknown command with usage', async () => {
    const p = WaymarkProcess.start(['frobnicate']);
    const { code } = await p.exited;
    // Issue 30: a usage error is exit 2, as the operator commands' (it was 64, EX_USAGE).
    expect(code).toBe(2);
    expect(p.stderr).toContain('unknown command');
  });
});

describe('waymark migrate and server against DATABASE_URL', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('migrates once, then reports the schema up to date', async () => {
    const first = WaymarkProcess.start(['migrate'], { env: { DATABASE_URL: db.url } });
    expect((await first.exited).code).toBe(0);
    expect(first.logs.find((l) => l.msg === 'migrations applied')?.applied).toEqual(expect.arrayContaining(['0001_init.sql']));
    const second = WaymarkProcess.start(['migrate'], { env: { DATABASE_URL: db.url } });
    expect((await second.exited).code).toBe(0);
    expect(second.logs.some((l) => l.msg === 'schema already up to date')).toBe(true);
  });

  it('bootstrap-key prints a new admin key once, which a server with authentication on accepts', async () => {
    const boot = WaymarkProcess.start(['bootstrap-key', '--name', 'first'], { env: { DATABASE_URL: db.url, WAYMARK_LOG_LEVEL: 'warn' } });
    expect((await boot.exited).code).toBe(0);
    expect(boot.logs).toHaveLength(1);
    const key = String(boot.logs[0]!.msg);
    expect(key).toMatch(/^wmk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/);
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on' } });
    const address = await p.listening();
    try {
      const runs = createClient(RunService, createGrpcTransport({ baseUrl: `http://${address}` }));
      await expect(runs.listRuns({})).rejects.toMatchObject({ code: Code.Unauthenticated });
      await runs.listRuns({}, { headers: { authorization: `Bearer ${key}` } });
    } finally {
      expect((await p.stop()).code).toBe(0);
    }
  });

  it('serves health over real HTTP/2 and stops cleanly on SIGTERM', async () => {
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0' } });
    const address = await p.listening();
    const client = grpcJsClient(address);
    try {
      const res = await unaryCall(client, Health.method.check, { service: '' });
      expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      // Each service the server registers answers a check by its name (reflection lists them).
      const served = ['waymark.v1.RunService', 'waymark.v1.SignalService', 'waymark.v1.FlowService', 'waymark.v1.AdminService',
        'waymark.v1.WorkerService', 'waymark.v1.McpService', 'waymark.v1.ScheduleService', 'waymark.v1.WebhookService'];
      for (const service of served) {
        expect((await unaryCall(client, Health.method.check, { service })).status, service).toBe(HealthCheckResponse_ServingStatus.SERVING);
      }
    } finally {
      client.close();
    }
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.some((l) => l.msg === 'stopped')).toBe(true);
    // The executor starts claiming only once the server listens (and said where).
    const listeningAt = p.logs.findIndex((l) => String(l.msg).includes(' listening on '));
    const executorAt = p.logs.findIndex((l) => l.msg === 'executor started');
    expect(listeningAt).toBeGreaterThanOrEqual(0);
    expect(executorAt).toBeGreaterThan(listeningAt);
    expect(p.logs[executorAt]).toMatchObject({ concurrency: 16 }); // the default
  });

  it.each([
    ['that never sent a byte', ''],
    ['that sent half the HTTP/2 preface', 'PRI * HTTP/2.0\r\n'],
  ])('stops on SIGTERM while a client holds a connection %s (it used to wait for that socket forever)', async (_what, bytes) => {
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_SHUTDOWN_GRACE_MS: '300', WAYMARK_SHUTDOWN_SETTLE_MS: '100' } });
    const address = await p.listening();
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    const socket = net.connect(port, host);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    if (bytes) socket.write(bytes);
    // Bounded well under the test's own timeout: before the fix the process never exited.
    const exit = await Promise.race([p.stop('SIGTERM'), new Promise((resolve) => setTimeout(() => resolve('still running 20 s after SIGTERM'), 20_000))]);
    socket.destroy();
    if (exit === 'still running 20 s after SIGTERM') await p.stop('SIGKILL');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(p.logs.some((l) => l.msg === 'grpc server stopped')).toBe(true);
    expect(p.logs.some((l) => l.msg === 'stopped')).toBe(true);
  });

  it('hands WAYMARK_EXECUTOR_CONCURRENCY to the executor, which reports it when it starts', async () => {
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_EXECUTOR_CONCURRENCY: '3' } });
    await p.listening();
    await p.waitForLog((l) => l.msg === 'executor started');
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.find((l) => l.msg === 'executor started')).toMatchObject({ concurrency: 3 });
  });

  it('reads WAYMARK_APPENDS_IN_FLIGHT (0: group commit off) and reports it with the listening line', async () => {
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_APPENDS_IN_FLIGHT: '0' } });
    await p.listening();
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.find((l) => String(l.msg).startsWith('waymark server listening on '))).toMatchObject({ appendsInFlight: 0 });
  });

  it('reads WAYMARK_RESUME_CACHE_ENTRIES and _BYTES (0: hot resume off) into the engine and reports them with the listening line', async () => {
    const p = WaymarkProcess.start(['server'], {
      env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_RESUME_CACHE_ENTRIES: '1234', WAYMARK_RESUME_CACHE_BYTES: '5678' },
    });
    await p.listening();
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.find((l) => String(l.msg).startsWith('waymark server listening on '))).toMatchObject({ resumeCacheEntries: 1234, resumeCacheBytes: 5678 });
  });

  it('reads WAYMARK_CLIENT_MAX_BUFFERED_BYTES and reports the per-client limits with the listening line', async () => {
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_CLIENT_MAX_BUFFERED_BYTES: '2097152' } });
    await p.listening();
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.find((l) => String(l.msg).startsWith('waymark server listening on '))).toMatchObject({ clientLimits: { bufferedBytes: 2_097_152, streams: 100 } });
  });
});

describe('waymark dev on the memory store', () => {
  it('DATABASE_URL=memory: serves and is ready with no PostgreSQL at all, and says the runs will not last', async () => {
    const p = WaymarkProcess.start(['dev'], { env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_METRICS_ADDR: '127.0.0.1:0' } });
    const address = await p.listening();
    const client = grpcJsClient(address);
    try {
      const res = await unaryCall(client, Health.method.check, { service: 'readiness' });
      expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    } finally {
      client.close();
    }
    expect((await p.stop('SIGTERM')).code).toBe(0);
    expect(p.logs.find((l) => String(l.msg).startsWith('waymark dev listening on '))).toMatchObject({ store: 'memory' });
    expect(p.logs.some((l) => l.level === 'warn' && String(l.msg).includes('memory store'))).toBe(true);
    expect(p.logs.some((l) => /PostgreSQL|migrations applied/.test(String(l.msg)))).toBe(false);
  });
});

describe('waymark dev with authentication on', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'waymark-dev-auth-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('creates a local admin key in the data dir (mode 0600), says where without printing it, and only calls with it are served', async () => {
    const p = WaymarkProcess.start(['dev'], { env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: dir } });
    const address = await p.listening();
    try {
      const file = path.join(dir, 'local-admin-key');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const key = (await readFile(file, 'utf8')).trim();
      expect(key).toMatch(/^wmk_[0-9a-f]{16}_/);
      expect(p.logs.find((l) => String(l.msg).startsWith('waymark dev listening on '))).toMatchObject({ auth: 'on' });
      expect(p.logs.some((l) => String(l.msg).includes('local admin key') && String(l.msg).includes(file))).toBe(true);
      expect(JSON.stringify(p.logs)).not.toContain(key);
      expect((await stat(path.join(dir, 'stream-token-secret'))).mode & 0o777).toBe(0o600);
      // What the CLI reads when it talks to a local address without a token.
      expect(localToken({ address, dataDir: dir })).toBe(key);
      expect(localToken({ address: 'waymark.example.com:50051', dataDir: dir })).toBeUndefined();
      const runs = createClient(RunService, createGrpcTransport({ baseUrl: `http://${address}` }));
      await expect(runs.listWorkflows({})).rejects.toMatchObject({ code: Code.Unauthenticated });
      expect((await runs.listWorkflows({}, { headers: { authorization: `Bearer ${key}` } })).workflows.length).toBeGreaterThan(0);
    } finally {
      expect((await p.stop('SIGTERM')).code).toBe(0);
    }
  });
});

describe('waymark dev on the embedded database', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'waymark-dev-test-'));
    await chmod(dir, 0o755); // as root, PostgreSQL runs as `postgres` and must enter the folder
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('starts PostgreSQL under .waymark, keeps data across restarts, and shares a running server', async () => {
    const env = { DATABASE_URL: undefined, WAYMARK_ADDR: '127.0.0.1:0' };
    const first = WaymarkProcess.start(['dev'], { cwd: dir, env });
    await first.listening();
    expect(existsSync(path.join(dir, '.waymark/pg/PG_VERSION'))).toBe(true);

    // A second dev on the same data directory reuses the running server rather than starting another.
    const second = WaymarkProcess.start(['dev'], { cwd: dir, env });
    await second.listening();
    expect(second.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('reusing the embedded PostgreSQL'))).toBe(true);
    expect((await second.stop('SIGINT')).code).toBe(0);
    expect((await first.stop('SIGINT')).code).toBe(0);

    // Restarted: the data survived (migrations are not applied again).
    const third = WaymarkProcess.start(['dev'], { cwd: dir, env });
    await third.listening();
    expect(third.logs.some((l) => l.msg === 'migrations applied')).toBe(false);
    expect((await third.stop('SIGTERM')).code).toBe(0);
  }, 120_000);
});
