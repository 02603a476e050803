import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer } from '../../../test/support/restartable-server.js';
import { opensslAvailable, TestCertificates, type Issued } from '../../../test/support/test-certificates.js';
import { createWaymarkClient, WaymarkError } from '../src/index.js';

// The TypeScript client against a real `waymark server` that serves TLS and requires a client
// certificate (WAYMARK_TLS_CLIENT_CA_FILE), with throwaway certificates from openssl.

let db: TestDatabase;
let server: RestartableServer;
let certs: TestCertificates;
let clientCert: Issued;

beforeAll(async () => {
  if (!opensslAvailable) return;
  db = await createTestDatabase('waymark_ts_tls');
  certs = new TestCertificates();
  const serverCert = certs.server();
  clientCert = certs.client('ts-client');
  server = new RestartableServer({
    DATABASE_URL: db.url, WAYMARK_TLS_CERT_FILE: serverCert.certFile, WAYMARK_TLS_KEY_FILE: serverCert.keyFile, WAYMARK_TLS_CLIENT_CA_FILE: certs.caFile,
  });
  await server.start();
});

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  certs?.remove();
});

describe.skipIf(!opensslAvailable)('TypeScript client over TLS', () => {
  it('lists the workflows over mTLS with the CA, a client certificate and a server name', { timeout: 60_000 }, async () => {
    const client = createWaymarkClient({
      address: server.address,
      tls: { ca: readFileSync(certs.caFile), cert: clientCert.cert, key: clientCert.key, serverName: 'localhost' },
    });
    try {
      expect((await client.listWorkflows()).map((w) => w.name)).toContain('refund');
    } finally {
      client.close();
    }
  });

  it('without a client certificate the server refuses the connection with the TLS alert', { timeout: 60_000 }, async () => {
    const client = createWaymarkClient({ address: server.address, tls: { ca: certs.ca, serverName: 'localhost' }, retry: { budgetMs: 0 } });
    try {
      // TLS 1.3 reports a refused client certificate after the handshake, as an alert on the
      // first read: connect-node surfaces it as the OpenSSL error, not as a gRPC status.
      const err = await client.listWorkflows().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(WaymarkError);
      expect(String((err as Error).message)).toMatch(/certificate required/);
    } finally {
      client.close();
    }
  });
});
