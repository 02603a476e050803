import { Code } from '@connectrpc/connect';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../../../test/support/api-keys.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer } from '../../../test/support/restartable-server.js';
import { settingsFromEnvironment } from '../src/environment.js';
import { createWaymarkClient, createWaymarkWorker, WaymarkError } from '../src/index.js';

// Clients and workers configured from the environment (docs/clients.md "Configuration from the
// environment"): what the code leaves unset is read from WAYMARK_* variables, what it gives wins.
// The live part runs against a real `waymark server` with authentication on.

const VARIABLES = ['WAYMARK_ADDRESS', 'WAYMARK_TOKEN', 'WAYMARK_NAMESPACE', 'WAYMARK_TLS', 'WAYMARK_CA_FILE', 'WAYMARK_CLIENT_CERT_FILE', 'WAYMARK_CLIENT_KEY_FILE', 'WAYMARK_SERVER_NAME'];

let db: TestDatabase;
let server: RestartableServer;
let key: { secret: string; keyId: string };
const dir = mkdtempSync(path.join(tmpdir(), 'waymark-ts-env-'));

beforeAll(async () => {
  db = await createTestDatabase('waymark_ts_env');
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_AUTH: 'on' });
  await server.start();
  key = await createApiKey(db.url, { namespace: 'default', scopes: ['runs:read', 'runs:write', 'approvals:decide'] });
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  vi.unstubAllEnvs();
});

/** Clears every variable the client reads, then sets `values`, for this test only. */
function stubEnvironment(values: Record<string, string>): void {
  for (const name of VARIABLES) vi.stubEnv(name, '');
  for (const [name, value] of Object.entries(values)) vi.stubEnv(name, value);
}

describe('settingsFromEnvironment', () => {
  const env = { WAYMARK_ADDRESS: 'env-host:1', WAYMARK_TOKEN: 'env-token', WAYMARK_NAMESPACE: 'env-ns' };

  it('fills what the code leaves unset', () => {
    expect(settingsFromEnvironment({}, env)).toEqual({ address: 'env-host:1', token: 'env-token', namespace: 'env-ns', tls: false });
    expect(settingsFromEnvironment({}, {})).toEqual({ address: '127.0.0.1:50051', token: '', namespace: '', tls: false });
  });

  it('lets what the code gives win', () => {
    expect(settingsFromEnvironment({ address: 'code-host:2', token: 'code-token', namespace: '', tls: false }, { ...env, WAYMARK_TLS: '1' }))
      .toEqual({ address: 'code-host:2', token: 'code-token', namespace: '', tls: false });
  });

  it('reads the PEM files of TLS and mTLS, completing what the code gives', () => {
    const files = { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'client.pem'), key: path.join(dir, 'client.key') };
    for (const [name, file] of Object.entries(files)) writeFileSync(file, `PEM of ${name}\n`);
    const tlsEnv = { WAYMARK_CA_FILE: files.ca, WAYMARK_CLIENT_CERT_FILE: files.cert, WAYMARK_CLIENT_KEY_FILE: files.key, WAYMARK_SERVER_NAME: 'localhost' };
    expect(settingsFromEnvironment({}, tlsEnv).tls).toEqual({ ca: 'PEM of ca\n', cert: 'PEM of cert\n', key: 'PEM of key\n', serverName: 'localhost' });
    expect(settingsFromEnvironment({ tls: { ca: 'mine' } }, tlsEnv).tls).toEqual({ ca: 'mine', cert: 'PEM of cert\n', key: 'PEM of key\n', serverName: 'localhost' });
    expect(settingsFromEnvironment({}, { WAYMARK_TLS: 'true' }).tls).toBe(true);
    expect(() => settingsFromEnvironment({}, { WAYMARK_CA_FILE: path.join(dir, 'missing.pem') })).toThrow(/WAYMARK_CA_FILE=.*missing\.pem: cannot read/);
  });
});

describe('a client and a worker with nothing but the environment', () => {
  it('reads WAYMARK_ADDRESS and WAYMARK_TOKEN: the refund is decided with the key; a token in code wins', { timeout: 60_000 }, async () => {
    stubEnvironment({ WAYMARK_ADDRESS: server.address, WAYMARK_TOKEN: key.secret });
    const client = createWaymarkClient();
    const wrong = createWaymarkClient({ token: 'wmk_not-a-key', retry: { budgetMs: 0 } });
    try {
      const started = await client.startRun('refund', { order: 'ts-env', amount: 4 }, { wait: true });
      const decided = await client.approve(started.waitingOn[0]!.approvalId, { by: 'ts-env' });
      expect(decided.approval.decidedByKeyId).toBe(key.keyId);
      const err = await wrong.listWorkflows().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(WaymarkError);
      expect((err as WaymarkError).code).toBe(Code.Unauthenticated);
    } finally {
      client.close();
      wrong.close();
    }
  });

  it('reads WAYMARK_NAMESPACE unless the code names one', () => {
    stubEnvironment({ WAYMARK_NAMESPACE: 'env-ns' });
    const fromEnv = createWaymarkClient();
    const fromCode = createWaymarkClient({ namespace: 'code-ns' });
    const worker = createWaymarkWorker({ log: () => {} });
    try {
      expect(fromEnv.namespace).toBe('env-ns');
      expect(fromCode.namespace).toBe('code-ns');
      expect(worker.namespace).toBe('env-ns');
    } finally {
      fromEnv.close();
      fromCode.close();
    }
  });
});
