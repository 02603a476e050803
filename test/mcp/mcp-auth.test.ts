import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { Registry } from '../../src/engine/registry.js';
import type { McpSecretRef, McpTransport } from '../../src/store/store.js';
import { NS } from '../engine/harness.js';
import { allowRule, closeMcpEngines, deliveriesLog, mcpEngine, startHttpMcpServer } from './mcp-fixture.js';

/*
 * Header references (docs/mcp.md "Authentication"): the counting server over Streamable HTTP,
 * started with MCP_REQUIRE_BEARER so every request without `Authorization: Bearer <token>` gets 401
 * (and is logged as "unauthorized"). A registration that names the token by reference reaches it;
 * the token is in no journal entry; a reference the replica cannot read fails the run before
 * anything is sent.
 */

const TOKEN = 'tok-7f3a9c';
const log = deliveriesLog();
const secrets = mkdtempSync(path.join(tmpdir(), 'waymark-mcp-secrets-'));
let http: Awaited<ReturnType<typeof startHttpMcpServer>>;

beforeAll(async () => {
  http = await startHttpMcpServer(log.file, { MCP_REQUIRE_BEARER: TOKEN });
  writeFileSync(path.join(secrets, 'shop-token'), `${TOKEN}\n`);
  mkdirSync(path.join(secrets, 'outside'));
});
afterAll(async () => {
  await closeMcpEngines();
  await http.stop();
  log.remove();
  rmSync(secrets, { recursive: true, force: true });
});

const refund = defineWorkflow({ name: 'secure-refund', input: z.object({ order: z.string() }) }, async (ctx, { order }) => ctx.tool('secure.refund', { order, amount: 5 }));

function bearer(ref: Omit<McpSecretRef, 'prefix'>): McpTransport {
  return { kind: 'http', url: http.url, headers: {}, headerRefs: { Authorization: { ...ref, prefix: 'Bearer ' } } };
}

async function start(transport: McpTransport, env: NodeJS.ProcessEnv, order: string) {
  const { engine, store, mcp } = await mcpEngine(new Registry().register(refund), http.url, { secure: { transport, tools: { refund: allowRule } } }, { secrets: { env } });
  const { run } = await engine.runStart({ namespace: NS, workflowName: 'secure-refund', input: { order }, execute: true });
  return { run, store, mcp };
}

describe('MCP header references', () => {
  it('a bearer token named by env:MCP_… reaches the server; the token is in no journal entry', async () => {
    const { run, store } = await start(bearer({ source: 'env', name: 'MCP_SHOP_TOKEN' }), { MCP_SHOP_TOKEN: TOKEN }, 'o-env');
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ structuredContent: { refunded: 'o-env' } });
    const entries = await store.journalList({ runId: run.id });
    expect(log.of('refund').filter((d) => d.args.order === 'o-env').map((d) => d.key)).toEqual([entries.find((e) => e.status === 'running')!.idempotencyKey]);
    expect(JSON.stringify(entries)).not.toContain(TOKEN);
    expect(JSON.stringify(await store.mcpServerGet({ namespace: NS, name: 'secure' }))).not.toContain(TOKEN);
  });

  it('a token read from a file inside WAYMARK_MCP_SECRET_DIR works the same', async () => {
    const { run } = await start(bearer({ source: 'file', name: path.join(secrets, 'shop-token') }), { WAYMARK_MCP_SECRET_DIR: secrets }, 'o-file');
    expect(run.status).toBe('SUCCEEDED');
    expect(log.of('refund').filter((d) => d.args.order === 'o-file')).toHaveLength(1);
  });

  it('the server really refuses a request without the token (a wrong inline header gets 401, retried as a transport failure)', async () => {
    const before = log.of('unauthorized').length;
    const { run } = await start({ kind: 'http', url: http.url, headers: { Authorization: 'Bearer wrong' } }, {}, 'o-wrong');
    expect(run.status).toBe('SUSPENDED'); // the pin's retry backoff
    expect(log.of('unauthorized').slice(before).map((d) => d.header)).toContain('Bearer wrong');
  });

  it.each([
    ['an unset variable', { source: 'env', name: 'MCP_SHOP_TOKEN' } as const, {}, 'refers to env:MCP_SHOP_TOKEN, which is not set on this replica'],
    ['a file with file references off', { source: 'file', name: '/etc/hostname' } as const, {}, 'file references are off on this replica: set WAYMARK_MCP_SECRET_DIR'],
    ['a file outside the secrets directory', { source: 'file', name: '/etc/hostname' } as const, { WAYMARK_MCP_SECRET_DIR: path.join(secrets, 'outside') }, 'which is outside WAYMARK_MCP_SECRET_DIR'],
    ['a missing file', { source: 'file', name: path.join(secrets, 'nope') } as const, { WAYMARK_MCP_SECRET_DIR: secrets }, 'cannot be read on this replica (ENOENT)'],
  ])('%s fails the run with McpSecretUnavailableError before anything is sent', async (_what, ref, env, message) => {
    const before = log.read().length;
    const { run, mcp } = await start(bearer(ref), env, 'o-missing');
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({ name: 'McpSecretUnavailableError' });
    expect(run.error!.message).toContain('MCP server "secure": header "Authorization"');
    expect(run.error!.message).toContain(message);
    expect(log.read()).toHaveLength(before); // no request reached the server, not even a 401
    expect(mcp.health(NS, 'secure')).toBeNull(); // the replica's configuration, not the server's health
  });
});
