import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opensslAvailable, TestCertificates } from '../support/test-certificates.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli } from './operator-harness.js';

/*
 * `waymark keys create|list|revoke` as the built CLI against `waymark dev` with authentication
 * on: without --token the CLI sends the dev server's local admin key (it talks to a loopback
 * address and WAYMARK_DATA_DIR has the key file), and a key it created stops working once revoked.
 * Over mTLS, `keys create --client-cert` binds a certificate that then authenticates the CLI's
 * --cert/--key without a token.
 */

let dir: string;
let dev: WaymarkProcess;
let address: string;
let env: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'waymark-keys-cli-'));
  dev = WaymarkProcess.start(['dev'], { env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: dir } });
  address = await dev.listening();
  env = { WAYMARK_DATA_DIR: dir };
}, 120_000);

afterAll(async () => {
  await dev?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('waymark keys', () => {
  it('creates, lists and revokes keys with the local admin key; the CLI uses a created key with --token until it is revoked', { timeout: 120_000 }, async () => {
    const created = await runCli(['keys', 'create', '--namespace', 'payments', '--scope', 'runs:read', '--name', 'payments reader', '-o', 'json'], { address, env });
    expect(created.code, created.stderr).toBe(0);
    const { key, secret } = jsonLines<{ key: { id: string; namespace: string; scopes: string[] }; secret: string }>(created.stdout)[0]!;
    expect(key).toMatchObject({ namespace: 'payments', scopes: ['runs:read'] });
    expect(secret).toMatch(new RegExp(`^wmk_${key.id}_`));

    const listed = await runCli(['keys', 'list', '--namespace', 'payments'], { address, env });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(key.id);
    expect(listed.stdout).not.toContain(secret.slice(22));

    // The new key reads its namespace; without any token (and no local key file) the server refuses.
    expect((await runCli(['runs', 'list', '--token', secret], { address })).code).toBe(0);
    const anonymous = await runCli(['runs', 'list'], { address, env: { WAYMARK_DATA_DIR: path.join(dir, 'none') } });
    expect(anonymous.code).toBe(6);
    expect(anonymous.stderr).toMatch(/credentials/i);
    // …and says where it looked for the local key, which is only read from one folder.
    expect(anonymous.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(anonymous.stderr).toContain(`no token was given and there is no local key at ${path.join(dir, 'none', 'local-admin-key')}: run this from the folder waymark dev runs in, or set WAYMARK_DATA_DIR`);
    // A token that is given and refused gets no such hint.
    expect((await runCli(['runs', 'list', '--token', 'wmk_nope_nope'], { address })).stderr).not.toContain('local key');

    const revoked = await runCli(['keys', 'revoke', key.id], { address, env });
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain('revoked');
    const after = await runCli(['runs', 'list', '--token', secret], { address });
    expect(after.code).not.toBe(0);
    expect(after.stderr).toContain('revoked');
    expect((await runCli(['keys', 'list', '--all', '-o', 'json'], { address, env })).stdout).toContain(key.id);
    expect((await readFile(path.join(dir, 'local-admin-key'), 'utf8')).trim()).not.toBe('');
  });

  it('refuses bad input with one line before connecting, and a namespaced key may not administer', { timeout: 120_000 }, async () => {
    const both = await runCli(['keys', 'create', '--namespace', 'x', '--admin', '--scope', 'admin'], { address, env });
    expect(both.code).toBe(2);
    expect(both.stderr.trim().split('\n')).toHaveLength(1);
    const noScope = await runCli(['keys', 'create', '--namespace', 'x'], { address, env });
    expect(noScope.code).toBe(2);
    const { secret } = jsonLines<{ secret: string }>((await runCli(['keys', 'create', '--namespace', 'ops', '--scope', 'runs:write', '-o', 'json'], { address, env })).stdout)[0]!;
    const denied = await runCli(['keys', 'list', '--token', secret], { address });
    expect(denied.code).toBe(6);
  });
});

describe.skipIf(!opensslAvailable)('waymark keys create --client-cert, over mTLS', () => {
  it('binds the certificate: the CLI authenticates with --cert/--key and no token; an unbound certificate and a revoked key are refused (exit 6)', { timeout: 120_000 }, async () => {
    const certs = new TestCertificates();
    const tlsDir = await mkdtemp(path.join(tmpdir(), 'waymark-keys-mtls-'));
    const served = certs.server();
    const bound = certs.client('payments-backend');
    const unbound = certs.client('someone-else');
    const server = WaymarkProcess.start(['dev'], {
      env: {
        DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: tlsDir,
        WAYMARK_TLS_CERT_FILE: served.certFile, WAYMARK_TLS_KEY_FILE: served.keyFile, WAYMARK_TLS_CLIENT_CA_FILE: certs.caFile, WAYMARK_TLS_CLIENT_AUTH: 'optional',
      },
    });
    try {
      const addr = await server.listening();
      const admin = { WAYMARK_DATA_DIR: tlsDir, WAYMARK_CA_FILE: certs.caFile };
      const created = await runCli(['keys', 'create', '--namespace', 'payments', '--scope', 'runs:read', '--scope', 'runs:write', '--client-cert', bound.certFile, '-o', 'json'], { address: addr, env: admin });
      expect(created.code, created.stderr).toBe(0);
      const { key } = jsonLines<{ key: { id: string; clientCertSha256: string } }>(created.stdout)[0]!;
      expect(key.clientCertSha256).toBe(bound.fingerprint256);
      const shown = await runCli(['keys', 'list', '--namespace', 'payments'], { address: addr, env: admin });
      expect(shown.code, shown.stderr).toBe(0);

      // No token and no local key: only the certificate says who calls.
      const asCert = (c: { certFile: string; keyFile: string }, args: string[]) => runCli([...args, '--cert', c.certFile, '--key', c.keyFile],
        { address: addr, env: { WAYMARK_DATA_DIR: path.join(tlsDir, 'none'), WAYMARK_CA_FILE: certs.caFile } });
      const started = await asCert(bound, ['runs', 'start', 'refund', '--input', '{"order":"A-7","amount":3}', '-o', 'json']);
      expect(started.code, started.stderr).toBe(0);
      expect(jsonLines<{ run: { namespace: string } }>(started.stdout)[0]!.run.namespace).toBe('payments');
      const stranger = await asCert(unbound, ['runs', 'list']);
      expect(stranger.code).toBe(6);
      expect(stranger.stderr).toMatch(/client certificate is bound to no API key/);

      expect((await runCli(['keys', 'revoke', key.id], { address: addr, env: admin })).code).toBe(0);
      const revoked = await asCert(bound, ['runs', 'list']);
      expect(revoked.code).toBe(6);
      expect(revoked.stderr).toContain('revoked');

      const missing = await runCli(['keys', 'create', '--namespace', 'payments', '--scope', 'runs:read', '--client-cert', path.join(tlsDir, 'nope.crt')], { address: addr, env: admin });
      expect(missing.code).toBe(2);
      expect(missing.stderr.trim().split('\n')).toEqual([expect.stringContaining('--client-cert: cannot read')]);
    } finally {
      await server.stop();
      await rm(tlsDir, { recursive: true, force: true });
      certs.remove();
    }
  });
});
