import { expect, it } from 'vitest';
import type { McpServerPutParams } from '../../src/store/store.js';
import type { SuiteContext } from './journal-store.conformance.js';

/*
 * MCP server registrations (docs/mcp.md): stored as given (header references included), one per (namespace, name), replaced in place (createdAt
 * kept), read and listed within their namespace only, removed once.
 */

function server(name: string, overrides: Partial<McpServerPutParams> = {}): McpServerPutParams {
  return {
    namespace: 'ns-a', name,
    transport: {
      kind: 'http', url: `http://127.0.0.1:9/${name}`, headers: { authorization: 'Bearer t' },
      headerRefs: { 'x-api-key': { source: 'env', name: 'MCP_KEY', prefix: '' }, 'x-other': { source: 'file', name: '/run/secrets/mcp/k', prefix: 'Key ' } },
    },
    tools: { refund: { policy: 'ask', mutating: true, timeoutMs: 5000 }, lookup: { policy: 'allow', mutating: null, timeoutMs: null } },
    ...overrides,
  };
}

export function mcpServersSection({ h }: SuiteContext): void {
  it('stores a registration as given, then replaces it in place keeping createdAt', async () => {
    const { store } = h();
    const first = await store.mcpServerPut(server('billing'));
    expect(first.created).toBe(true);
    expect(first.server).toMatchObject({ namespace: 'ns-a', name: 'billing', transport: server('billing').transport, tools: server('billing').tools });
    expect(await store.mcpServerGet({ namespace: 'ns-a', name: 'billing' })).toEqual(first.server);
    const stdio = { kind: 'stdio' as const, command: 'node', args: ['server.js'], env: { MODE: 'test' } };
    const second = await store.mcpServerPut(server('billing', { transport: stdio, tools: {} }));
    expect(second.created).toBe(false);
    expect(second.server).toMatchObject({ transport: stdio, tools: {} });
    expect(second.server.createdAt).toEqual(first.server.createdAt);
    expect(second.server.updatedAt.getTime()).toBeGreaterThanOrEqual(first.server.updatedAt.getTime());
  });

  it('reads and lists within the namespace only, by name', async () => {
    const { store } = h();
    await store.mcpServerPut(server('zeta'));
    await store.mcpServerPut(server('alpha'));
    await store.mcpServerPut(server('alpha', { namespace: 'ns-b' }));
    expect((await store.mcpServerList({ namespace: 'ns-a' })).map((s) => s.name)).toEqual(['alpha', 'zeta']);
    expect((await store.mcpServerList({ namespace: 'ns-b' })).map((s) => s.name)).toEqual(['alpha']);
    expect(await store.mcpServerList({ namespace: 'ns-none' })).toEqual([]);
    expect(await store.mcpServerGet({ namespace: 'ns-b', name: 'zeta' })).toBeNull();
  });

  it('removes a registration once, in its namespace only', async () => {
    const { store } = h();
    await store.mcpServerPut(server('billing'));
    await store.mcpServerPut(server('billing', { namespace: 'ns-b' }));
    expect(await store.mcpServerRemove({ namespace: 'ns-a', name: 'billing' })).toBe(true);
    expect(await store.mcpServerRemove({ namespace: 'ns-a', name: 'billing' })).toBe(false);
    expect(await store.mcpServerGet({ namespace: 'ns-a', name: 'billing' })).toBeNull();
    expect(await store.mcpServerGet({ namespace: 'ns-b', name: 'billing' })).not.toBeNull();
  });

  it('a returned record is a copy: editing it changes nothing stored', async () => {
    const { store } = h();
    const { server: stored } = await store.mcpServerPut(server('billing'));
    stored.tools.refund!.policy = 'deny';
    expect((await store.mcpServerGet({ namespace: 'ns-a', name: 'billing' }))!.tools.refund!.policy).toBe('ask');
  });
}
