import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, startOperatorServer, type CliResult } from './operator-harness.js';

/*
 * `waymark mcp add|list|remove` (src/cli/client/mcp-commands.ts) as the CLI in a subprocess against
 * a real server on Postgres: both transports, per-tool policies, both output modes, header values
 * never printed, bad input refused with one line and nothing stored, removing twice is exit 3.
 */

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_mcp_cli');
  ({ server, address } = await startOperatorServer(db));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe('waymark mcp', { timeout: 120_000 }, () => {
  it('adds an HTTP and a stdio server, lists them without secrets, replaces and removes one', async () => {
    const added = await cli('mcp', 'add', 'billing', '--url', 'http://127.0.0.1:9/mcp', '--header', 'authorization=Bearer s3cret', '--tool', 'refund=ask,mutating,timeout=5000', '--tool', 'lookup');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe('MCP server billing registered; tools: lookup, refund\n');
    const local = await cli('mcp', 'add', 'local', '--command', 'node', '--arg', 'server.mjs', '--arg=--stdio', '--env', 'TOKEN=t0k', '-o', 'json');
    expect(local.code, local.stderr).toBe(0);
    expect(jsonLines(local.stdout)[0]).toMatchObject({ created: true, server: { name: 'local', stdio: { command: 'node', args: ['server.mjs', '--stdio'], env: { TOKEN: '<redacted>' } } } });
    const table = await cli('mcp', 'list');
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^NAME\s+TRANSPORT\s+WHERE\s+TOOLS\n/);
    expect(table.stdout).toMatch(/billing\s+http\s+http:\/\/127\.0\.0\.1:9\/mcp\s+lookup=allow refund=ask,mutating/);
    expect(table.stdout).toMatch(/local\s+stdio\s+node server\.mjs --stdio\s+\(all, allow\)/);
    // Health: nothing has called either server yet.
    expect(table.stdout).toMatch(/\nNAME\s+HEALTH \(seen from the answering replica\)\nbilling\s+not tried\nlocal\s+not tried\n/);
    const listed = jsonLines((await cli('mcp', 'list', '-o', 'json')).stdout);
    expect(listed.map((s) => s.name)).toEqual(['billing', 'local']);
    expect(listed[0]).toMatchObject({ http: { headers: { authorization: '<redacted>' } }, tools: { refund: { policy: 'TOOL_POLICY_ASK', mutating: true, timeoutMs: 5000 } } });
    expect(JSON.stringify(listed) + table.stdout).not.toContain('s3cret');
    expect((await cli('mcp', 'add', 'billing', '--url', 'http://127.0.0.1:9/v2')).stdout).toBe('MCP server billing replaced; tools: every tool it lists (allow)\n');
    expect((await cli('mcp', 'remove', 'local')).stdout).toBe('MCP server local removed\n');
    const again = await cli('mcp', 'remove', 'local');
    expect(again.code).toBe(3);
    expect(jsonLines((await cli('mcp', 'list', '-o', 'json')).stdout).map((s) => s.name)).toEqual(['billing']);
  });

  it('adds a server whose headers are references and lists the references (never a value)', async () => {
    const added = await cli('mcp', 'add', 'secure', '--url', 'http://127.0.0.1:9/mcp', '--header-ref', 'authorization=Bearer env:MCP_SHOP_TOKEN', '--header-ref', 'x-api-key=file:/run/secrets/mcp/key');
    expect(added.code, added.stderr).toBe(0);
    const table = await cli('mcp', 'list');
    expect(table.stdout).toMatch(/secure\s+http\s+http:\/\/127\.0\.0\.1:9\/mcp authorization=Bearer env:MCP_SHOP_TOKEN x-api-key=file:\/run\/secrets\/mcp\/key\s+\(all, allow\)/);
    const listed = jsonLines((await cli('mcp', 'list', '-o', 'json')).stdout).find((x) => x.name === 'secure');
    expect(listed).toMatchObject({ http: { headerRefs: { authorization: { env: 'MCP_SHOP_TOKEN', prefix: 'Bearer ' }, 'x-api-key': { file: '/run/secrets/mcp/key' } } } });
    expect((await cli('mcp', 'remove', 'secure')).code).toBe(0);
  });

  it.each([
    [['mcp', 'add', 'x', '--url', 'http://a/mcp', '--header-ref', 'authorization=Bearer MCP_TOKEN'], '--header-ref takes NAME=[PREFIX ]env:VARIABLE'],
    [['mcp', 'add', 'x', '--url', 'http://a/mcp', '--header-ref', 'authorization=env:DATABASE_URL'], 'must name a variable starting with MCP_'],
    [['mcp', 'add', 'x', '--command', 'node', '--header-ref', 'authorization=env:MCP_T'], '--header and --header-ref go with --url'],
    [['mcp', 'add', 'x'], 'give exactly one of --url (Streamable HTTP) and --command (stdio)'],
    [['mcp', 'add', 'x', '--url', 'http://a/mcp', '--command', 'node'], 'give exactly one of --url'],
    [['mcp', 'add', 'x', '--url', 'http://a/mcp', '--header', 'novalue'], '--header takes NAME=VALUE'],
    [['mcp', 'add', 'x', '--url', 'http://a/mcp', '--tool', 'refund=sometimes'], '"sometimes" is none of allow, ask, deny'],
    [['mcp', 'add', 'x', '--url', 'ftp://a/mcp'], 'server.http.url'],
  ])('refuses %j with one line, exit 2, nothing stored', async (args, message) => {
    const r = await cli(...args);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(message);
    expect(jsonLines((await cli('mcp', 'list', '-o', 'json')).stdout).map((s) => s.name)).not.toContain('x');
  });
});
