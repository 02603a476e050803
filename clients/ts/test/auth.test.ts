import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../test/support/api-keys.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer } from '../../../test/support/restartable-server.js';
import { createWaymarkClient, WaymarkError } from '../src/index.js';

// The TypeScript client against a real `waymark server` with authentication on: the refund
// scenario with an API key in `token` (the decision records the key), and UNAUTHENTICATED without.

let db: TestDatabase;
let server: RestartableServer;
let key: { secret: string; keyId: string };
let admin: { secret: string; keyId: string };

beforeAll(async () => {
  db = await createTestDatabase('waymark_ts_auth');
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_AUTH: 'on', WAYMARK_STREAM_TOKEN_SECRET: 'ts-client-test-stream-token-secret-32' });
  await server.start();
  key = await createApiKey(db.url, { namespace: 'default', scopes: ['runs:read', 'runs:write', 'approvals:decide'] });
  admin = await createApiKey(db.url);
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe('TypeScript client with authentication on', () => {
  it('runs the refund scenario with a key; the decision records the key id', { timeout: 60_000 }, async () => {
    const client = createWaymarkClient({ address: server.address, token: key.secret });
    try {
      const started = await client.startRun('refund', { order: 'ts-auth', amount: 4 }, { wait: true });
      const decided = await client.approve(started.waitingOn[0]!.approvalId, { by: 'ts-client' });
      expect(decided.approval.decidedByKeyId).toBe(key.keyId);
    } finally {
      client.close();
    }
  });

  it('without a key the call is UNAUTHENTICATED, and a token function is asked per call', { timeout: 60_000 }, async () => {
    const anonymous = createWaymarkClient({ address: server.address, retry: { budgetMs: 0 } });
    let asked = 0;
    const rotating = createWaymarkClient({ address: server.address, token: () => { asked += 1; return key.secret; } });
    try {
      const err = await anonymous.listWorkflows().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(WaymarkError);
      expect((err as WaymarkError).code).toBe(Code.Unauthenticated);
      await rotating.listWorkflows();
      await rotating.listWorkflows();
      expect(asked).toBe(2);
    } finally {
      anonymous.close();
      rotating.close();
    }
  });

  it('manages keys (createKey, listKeys, revokeKey) with an admin key, and mints stream tokens', { timeout: 60_000 }, async () => {
    const client = createWaymarkClient({ address: server.address, token: admin.secret });
    try {
      const { key: created, secret } = await client.createKey({ name: 'ts', namespace: 'team-ts', scopes: ['runs:read'] });
      expect(secret.startsWith(`wmk_${created.id}_`)).toBe(true);
      expect((await client.listKeys({ namespace: 'team-ts' })).map((k) => k.id)).toEqual([created.id]);
      expect((await client.revokeKey(created.id)).revokeTime).toBeDefined();
      expect(await client.listKeys({ namespace: 'team-ts' })).toEqual([]);
      const { run } = await client.startRun('refund', { order: 'ts-token', amount: 1 }, { wait: true });
      const { token, expiresAt } = await client.createStreamToken(run.id, { ttlMs: 60_000 });
      expect(expiresAt.getTime()).toBeGreaterThan(Date.now());
      const browser = createWaymarkClient({ address: server.address, token });
      try {
        expect((await browser.getRun(run.id)).run.id).toBe(run.id);
      } finally {
        browser.close();
      }
    } finally {
      client.close();
    }
  });
});
