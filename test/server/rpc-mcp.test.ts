import { Code, createClient } from '@connectrpc/connect';
import { ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { describe, expect, it } from 'vitest';
import { McpService } from '../../src/gen/waymark/v1/mcp_service_pb.js';
import { ToolPolicy } from '../../src/gen/waymark/v1/worker_service_pb.js';
import { apiHarness, failure } from './api-harness.js';

/* McpService in process (docs/mcp.md): put, replace, list (values redacted), remove; bad registrations refused with nothing stored. */

const http = (url: string, headers: Record<string, string> = {}) => ({ case: 'http' as const, value: { url, headers } });

describe('McpService', () => {
  it('registers, replaces, lists with header values redacted, and removes a server', async () => {
    const h = apiHarness();
    const mcp = createClient(McpService, h.transport);
    const put = await mcp.putMcpServer({ server: {
      name: 'billing', transport: http('https://mcp.example.com/mcp', { authorization: 'Bearer s3cret' }),
      tools: { refund: { policy: ToolPolicy.ASK, mutating: true, timeoutMs: 5000 }, lookup: {} },
    } });
    expect(put.created).toBe(true);
    expect(put.server).toMatchObject({ namespace: 'default', name: 'billing', transport: { case: 'http', value: { url: 'https://mcp.example.com/mcp', headers: { authorization: '<redacted>' } } } });
    expect(put.server!.tools.refund).toMatchObject({ policy: ToolPolicy.ASK, mutating: true, timeoutMs: 5000 });
    expect(put.server!.tools.lookup).toMatchObject({ policy: ToolPolicy.ALLOW, timeoutMs: 0 });
    expect(put.server!.tools.lookup!.mutating).toBeUndefined();
    // Stored as given: the secret reaches the connector, never a response.
    expect(await h.store.mcpServerGet({ namespace: 'default', name: 'billing' })).toMatchObject({
      transport: { kind: 'http', headers: { authorization: 'Bearer s3cret' } },
      tools: { refund: { policy: 'ask', mutating: true, timeoutMs: 5000 }, lookup: { policy: 'allow', mutating: null, timeoutMs: null } },
    });
    const stdio = { case: 'stdio' as const, value: { command: 'node', args: ['server.mjs', '--stdio'], env: { TOKEN: 't' } } };
    const replaced = await mcp.putMcpServer({ server: { name: 'billing', transport: stdio } });
    expect(replaced.created).toBe(false);
    expect(replaced.server!.transport).toMatchObject({ case: 'stdio', value: { command: 'node', args: ['server.mjs', '--stdio'], env: { TOKEN: '<redacted>' } } });
    await mcp.putMcpServer({ namespace: 'other', server: { name: 'zeta', transport: http('http://127.0.0.1:9/mcp') } });
    expect((await mcp.listMcpServers({})).servers.map((s) => s.name)).toEqual(['billing']);
    expect((await mcp.listMcpServers({ namespace: 'other' })).servers.map((s) => s.name)).toEqual(['zeta']);
    await mcp.removeMcpServer({ name: 'billing' });
    expect((await mcp.listMcpServers({})).servers).toEqual([]);
    const again = await failure(mcp.removeMcpServer({ name: 'billing' }));
    expect(again.code).toBe(Code.NotFound);
    expect(again.findDetails(ErrorInfoSchema)[0]?.reason).toBe('MCP_SERVER_NOT_FOUND');
  });

  it('stores header references as given and shows them (they name where a replica reads the value, not the value)', async () => {
    const h = apiHarness();
    const mcp = createClient(McpService, h.transport);
    const put = await mcp.putMcpServer({ server: { name: 'billing', transport: { case: 'http', value: {
      url: 'https://mcp.example.com/mcp', headers: { 'x-tenant': 'acme' },
      headerRefs: { authorization: { source: { case: 'env', value: 'MCP_BILLING_TOKEN' }, prefix: 'Bearer ' }, 'x-api-key': { source: { case: 'file', value: '/run/secrets/mcp/key' } } },
    } } } });
    expect(put.server!.transport).toMatchObject({ case: 'http', value: {
      headers: { 'x-tenant': '<redacted>' },
      headerRefs: { authorization: { source: { case: 'env', value: 'MCP_BILLING_TOKEN' }, prefix: 'Bearer ' }, 'x-api-key': { source: { case: 'file', value: '/run/secrets/mcp/key' }, prefix: '' } },
    } });
    expect((await mcp.listMcpServers({})).servers[0]!.transport).toEqual(put.server!.transport);
    expect(await h.store.mcpServerGet({ namespace: 'default', name: 'billing' })).toMatchObject({ transport: { kind: 'http', headers: { 'x-tenant': 'acme' }, headerRefs: {
      authorization: { source: 'env', name: 'MCP_BILLING_TOKEN', prefix: 'Bearer ' }, 'x-api-key': { source: 'file', name: '/run/secrets/mcp/key', prefix: '' },
    } } });
  });

  const refTo = (headerRefs: Record<string, unknown>, headers: Record<string, string> = {}) => ({ name: 'x', transport: { case: 'http' as const, value: { url: 'http://127.0.0.1:9/mcp', headers, headerRefs } } });

  it.each([
    ['no transport', { name: 'x' }, 'server.transport'],
    ['a reference to a variable outside MCP_', refTo({ authorization: { source: { case: 'env', value: 'DATABASE_URL' } } }), 'server.http.header_refs["authorization"].env'],
    ['a relative file reference', refTo({ authorization: { source: { case: 'file', value: 'token.txt' } } }), 'server.http.header_refs["authorization"].file'],
    ['a file reference climbing out with ..', refTo({ authorization: { source: { case: 'file', value: '/run/secrets/../../etc/shadow' } } }), 'server.http.header_refs["authorization"].file'],
    ['a reference without a source', refTo({ authorization: { prefix: 'Bearer ' } }), 'server.http.header_refs["authorization"]'],
    ['a header both inline and by reference', refTo({ Authorization: { source: { case: 'env', value: 'MCP_T' } } }, { authorization: 'Bearer x' }), 'is also in `headers`'],
    ['a bad name', { name: 'has.dot', transport: http('http://127.0.0.1:9/mcp') }, 'server.name'],
    ['a URL that is not http', { name: 'x', transport: http('file:///etc/passwd') }, 'server.http.url'],
    ['an empty command', { name: 'x', transport: { case: 'stdio' as const, value: { command: ' ', args: [], env: {} } } }, 'server.stdio.command'],
    ['an unknown policy', { name: 'x', transport: http('http://127.0.0.1:9/mcp'), tools: { t: { policy: 9 as ToolPolicy } } }, 'server.tools["t"].policy'],
  ])('refuses %s with INVALID_ARGUMENT naming the field, storing nothing', async (_what, server, field) => {
    const h = apiHarness();
    const mcp = createClient(McpService, h.transport);
    const err = await failure(mcp.putMcpServer({ server }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toContain(field);
    expect(await h.store.mcpServerList({ namespace: 'default' })).toEqual([]);
  });
});
