import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { unaryCall } from '../server/grpc-js-client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { opensslAvailable, TestCertificates } from '../support/test-certificates.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * `waymark server` with the TLS settings, as a real process: the API port speaks TLS only, the
 * plaintext health listener (WAYMARK_HEALTH_ADDR) answers the probes, and files that do not load
 * stop the start with exit 78 naming the setting.
 */

let db: TestDatabase;
let certs: TestCertificates;
beforeAll(async () => {
  db = await createTestDatabase('waymark_tls');
  certs = new TestCertificates();
});
afterAll(async () => {
  await db?.drop();
  certs?.remove();
});

describe.skipIf(!opensslAvailable)('waymark server over TLS', () => {
  it('serves the API over TLS and health in plaintext on WAYMARK_HEALTH_ADDR', { timeout: 120_000 }, async () => {
    const server = certs.server();
    const p = WaymarkProcess.start(['server'], {
      env: {
        DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_HEALTH_ADDR: '127.0.0.1:0',
        WAYMARK_TLS_CERT_FILE: server.certFile, WAYMARK_TLS_KEY_FILE: server.keyFile,
      },
    });
    try {
      const address = await p.listening();
      const health = await p.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('health listening on '));
      expect(p.logs.find((l) => String(l.msg).includes(' listening on ') && l.address === address)?.tls).toBe(true);

      const secure = new grpc.Client(address, grpc.credentials.createSsl(Buffer.from(certs.ca)));
      expect((await unaryCall(secure, Health.method.check, { service: 'readiness' })).status).toBe(ServingStatus.SERVING);
      secure.close();
      const plaintextApi = new grpc.Client(address, grpc.credentials.createInsecure());
      await expect(unaryCall(plaintextApi, Health.method.check, { service: '' }, 3_000)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
      plaintextApi.close();

      const probes = new grpc.Client(String(health.address), grpc.credentials.createInsecure());
      expect((await unaryCall(probes, Health.method.check, { service: 'liveness' })).status).toBe(ServingStatus.SERVING);
      probes.close();
    } finally {
      await p.stop();
    }
  });

  it('refuses a key that does not match the certificate with exit 78 naming the setting', async () => {
    const a = certs.server('a');
    const b = certs.server('b');
    const p = WaymarkProcess.start(['server'], { env: { DATABASE_URL: db.url, WAYMARK_TLS_CERT_FILE: a.certFile, WAYMARK_TLS_KEY_FILE: b.keyFile } });
    const { code } = await p.exited;
    expect(code).toBe(78);
    expect(p.stderr.trim().split('\n')).toEqual([expect.stringContaining('invalid setting WAYMARK_TLS_CERT_FILE')]);
    expect(p.stderr).toContain(path.basename(b.keyFile));
  });
});
