import { copyFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { createClient, type Interceptor } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { clientCertificateKey, type ClientCertificate } from '../../src/server/auth/client-certificate.js';
import { loadTlsFiles, TlsFileError } from '../../src/server/transport/tls.js';
import { fingerprintOf, opensslAvailable, TestCertificates } from '../support/test-certificates.js';
import { until } from '../support/until.js';
import { unaryCall } from './grpc-js-client.js';
import { startTestServer } from './test-server.js';

/*
 * TLS on the API port with throwaway certificates (openssl, test/support/test-certificates.ts):
 * every protocol over one TLS port, a certificate rotated on disk reaching new connections, mTLS
 * recording the verified client certificate on the request context.
 */

let certs: TestCertificates;
beforeAll(() => {
  certs = new TestCertificates();
});
afterAll(() => certs?.remove());

/** The certificate a new TLS connection (ALPN h2) is served, as a fingerprint. */
function servedFingerprint(port: number, extra: tls.ConnectionOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: certs.ca, ALPNProtocols: ['h2'], ...extra }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.destroy();
      resolve(fingerprintOf(`-----BEGIN CERTIFICATE-----\n${raw.toString('base64')}\n-----END CERTIFICATE-----\n`));
    });
    socket.once('error', reject);
  });
}

describe.skipIf(!opensslAvailable)('TLS on the API port', () => {
  it('serves gRPC (grpc-js), gRPC-Web and Connect on one TLS port, and refuses plaintext h2c', async () => {
    const server = certs.server();
    const t = await startTestServer({ tls: { certFile: server.certFile, keyFile: server.keyFile } });
    try {
      expect(t.server.url).toBe(`https://127.0.0.1:${t.server.port}`);
      const secure = new grpc.Client(t.server.address, grpc.credentials.createSsl(Buffer.from(certs.ca)));
      expect((await unaryCall(secure, Health.method.check, { service: '' })).status).toBe(ServingStatus.SERVING);
      secure.close();

      const nodeOptions = { ca: certs.ca };
      for (const transport of [
        createGrpcTransport({ baseUrl: t.server.url, nodeOptions }),
        createGrpcWebTransport({ baseUrl: t.server.url, httpVersion: '2', nodeOptions }),
        createConnectTransport({ baseUrl: t.server.url, httpVersion: '2', nodeOptions }),
      ]) {
        expect((await createClient(Health, transport).check({ service: '' })).status).toBe(ServingStatus.SERVING);
      }

      const plaintext = new grpc.Client(t.server.address, grpc.credentials.createInsecure());
      await expect(unaryCall(plaintext, Health.method.check, { service: '' }, 3_000)).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
      plaintext.close();
      // A client that does not trust the CA fails the handshake.
      await expect(servedFingerprint(t.server.port, { ca: undefined })).rejects.toThrow(/self.signed|unable to (get|verify)/i);
    } finally {
      await t.server.close(1000);
    }
  });

  it('serves a rotated certificate to new connections once the files change, and keeps the old one when the new pair does not load', async () => {
    const first = certs.server('first');
    const second = certs.server('second');
    const third = certs.server('third');
    // The files the server reads, overwritten in place as a rotation does.
    const certFile = path.join(certs.dir, 'live.crt');
    const keyFile = path.join(certs.dir, 'live.key');
    copyFileSync(first.certFile, certFile);
    copyFileSync(first.keyFile, keyFile);
    const t = await startTestServer({ tls: { certFile, keyFile, reloadIntervalMs: 50 } });
    try {
      expect(await servedFingerprint(t.server.port)).toBe(first.fingerprint256);
      // Mid-test: a connection opened before the rotation keeps working after it.
      const before = new grpc.Client(t.server.address, grpc.credentials.createSsl(Buffer.from(certs.ca)));
      expect((await unaryCall(before, Health.method.check, { service: '' })).status).toBe(ServingStatus.SERVING);

      copyFileSync(second.certFile, certFile);
      copyFileSync(second.keyFile, keyFile);
      await until('the second certificate to be served', async () => ((await servedFingerprint(t.server.port)) === second.fingerprint256 ? true : undefined));
      expect((await unaryCall(before, Health.method.check, { service: '' })).status).toBe(ServingStatus.SERVING);
      before.close();

      // A certificate without its key (the key file not rotated yet) does not load: the second keeps serving.
      copyFileSync(third.certFile, certFile);
      await until('the failed reload to be logged', () => (t.logs.some((l) => l.msg.includes('do not load')) ? true : undefined));
      expect(await servedFingerprint(t.server.port)).toBe(second.fingerprint256);
      copyFileSync(third.keyFile, keyFile);
      await until('the third certificate to be served', async () => ((await servedFingerprint(t.server.port)) === third.fingerprint256 ? true : undefined));
    } finally {
      await t.server.close(1000);
    }
  });

  it('mTLS: a client certificate from the client CA is required and recorded on the request context', async () => {
    const server = certs.server();
    const alice = certs.client('alice');
    const strangers = new TestCertificates('Other CA');
    const mallory = strangers.client('mallory');
    const seen: Array<ClientCertificate | undefined> = [];
    const record: Interceptor = (next) => (req) => {
      seen.push(req.contextValues.get(clientCertificateKey));
      return next(req);
    };
    const t = await startTestServer({
      tls: { certFile: server.certFile, keyFile: server.keyFile, clientCaFile: certs.caFile },
      interceptors: [record],
    });
    try {
      const withCert = createClient(Health, createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: certs.ca, cert: alice.cert, key: alice.key } }));
      expect((await withCert.check({ service: '' })).status).toBe(ServingStatus.SERVING);
      expect(seen).toEqual([expect.objectContaining({ fingerprint256: alice.fingerprint256, subject: 'CN=alice,O=Waymark Tests', issuer: 'CN=Waymark Test CA' })]);

      const anonymous = createClient(Health, createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: certs.ca } }));
      await expect(anonymous.check({ service: '' })).rejects.toThrow();
      const foreign = createClient(Health, createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: certs.ca, cert: mallory.cert, key: mallory.key } }));
      await expect(foreign.check({ service: '' })).rejects.toThrow();
      expect(seen).toHaveLength(1); // neither reached a handler
    } finally {
      await t.server.close(1000);
      strangers.remove();
    }
  });

  it('mTLS optional: a connection without a certificate is served with no certificate on its context', async () => {
    const server = certs.server();
    const bob = certs.client('bob');
    const seen: Array<ClientCertificate | undefined> = [];
    const record: Interceptor = (next) => (req) => {
      seen.push(req.contextValues.get(clientCertificateKey));
      return next(req);
    };
    const t = await startTestServer({
      tls: { certFile: server.certFile, keyFile: server.keyFile, clientCaFile: certs.caFile, clientAuth: 'optional' },
      interceptors: [record],
    });
    try {
      await createClient(Health, createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: certs.ca } })).check({ service: '' });
      await createClient(Health, createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: certs.ca, cert: bob.cert, key: bob.key } })).check({ service: '' });
      expect(seen).toEqual([undefined, expect.objectContaining({ fingerprint256: bob.fingerprint256 })]);
    } finally {
      await t.server.close(1000);
    }
  });

  it('refuses files that do not load, naming the file', () => {
    const a = certs.server('a');
    const b = certs.server('b');
    expect(() => loadTlsFiles({ certFile: path.join(certs.dir, 'missing.crt'), keyFile: a.keyFile })).toThrow(/missing\.crt: cannot be read \(ENOENT\)/);
    expect(() => loadTlsFiles({ certFile: a.certFile, keyFile: b.keyFile })).toThrow(TlsFileError);
  });
});
