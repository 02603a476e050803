import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opensslAvailable, TestCertificates, type Issued } from '../support/test-certificates.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { jsonLines, runCli, startOperatorServer } from './operator-harness.js';

/*
 * The operator commands against a real `waymark server` serving TLS and requiring a client
 * certificate (throwaway certificates from openssl): the TLS flags and their variables reach the
 * client package, and a refused or untrusted certificate is one line and exit 6, never a retry.
 */

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;
let certs: TestCertificates;
let client: Issued;

beforeAll(async () => {
  if (!opensslAvailable) return;
  db = await createMigratedDatabase('waymark_operator_tls');
  certs = new TestCertificates();
  const serverCert = certs.server();
  client = certs.client('operator');
  ({ server, address } = await startOperatorServer(db, {
    WAYMARK_TLS_CERT_FILE: serverCert.certFile, WAYMARK_TLS_KEY_FILE: serverCert.keyFile, WAYMARK_TLS_CLIENT_CA_FILE: certs.caFile,
  }));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
  certs?.remove();
});

describe.skipIf(!opensslAvailable)('over TLS', { timeout: 120_000 }, () => {
  it('--ca, --cert and --key (or WAYMARK_CA_FILE, WAYMARK_CLIENT_CERT_FILE, WAYMARK_CLIENT_KEY_FILE) reach the server over mTLS', async () => {
    const byFlags = await runCli(['workflows', 'list', '-o', 'json', '--ca', certs.caFile, '--cert', client.certFile, '--key', client.keyFile, '--server-name', 'localhost'], { address });
    expect(byFlags.code, byFlags.stderr).toBe(0);
    expect(jsonLines(byFlags.stdout).map((w) => w.name)).toContain('refund');
    const byEnv = await runCli(['runs', 'list'], { address, env: { WAYMARK_CA_FILE: certs.caFile, WAYMARK_CLIENT_CERT_FILE: client.certFile, WAYMARK_CLIENT_KEY_FILE: client.keyFile } });
    expect(byEnv.code, byEnv.stderr).toBe(0);
    expect(byEnv.stdout).toBe('no runs match\n');
  });

  it.each([
    ['no client certificate', () => ['--ca', certs.caFile], /TLS with the server at \S+ failed: tlsv13 alert certificate required; check --ca/],
    ["a server certificate Node's roots do not trust", () => ['--tls', '--cert', client.certFile, '--key', client.keyFile], /TLS with the server at \S+ failed: self-signed certificate in certificate chain/],
  ])('%s: one line, exit 6', async (_, flags, message) => {
    const r = await runCli(['workflows', 'list', ...flags()], { address });
    expect(r.code).toBe(6);
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });

  it('plaintext to a TLS port is unavailable (exit 5), with a hint to add --tls', async () => {
    const r = await runCli(['workflows', 'list', '--timeout', '2s'], { address });
    expect(r.code).toBe(5);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/one serving TLS needs --tls or --ca FILE/);
  });

  it('a --cert without its --key is refused before connecting (exit 2)', async () => {
    const r = await runCli(['workflows', 'list', '--cert', client.certFile], { address });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--cert and --key go together/);
  });
});
