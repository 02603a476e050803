import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli } from './operator-harness.js';

/*
 * `waymark keys create|list|revoke` as the built CLI against `waymark dev` with authentication
 * on: without --token the CLI sends the dev server's local admin key (it talks to a loopback
 * address and WAYMARK_DATA_DIR has the key file), and a key it created stops working once revoked.
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
