import type { McpServerKeyParams, McpServerPutParams, McpServerPutResult, McpServerRecord } from '../store.js';

/* The memory store's MCP server registrations (docs/mcp.md), as the `mcp_servers` table of migration 0015 holds them. */
export class MemoryMcpServers {
  private readonly servers = new Map<string, McpServerRecord>();

  constructor(private readonly now: () => Date) {}

  mcpServerPut(params: McpServerPutParams): McpServerPutResult {
    const key = keyOf(params);
    const existing = this.servers.get(key);
    const now = this.now();
    const server: McpServerRecord = {
      namespace: params.namespace, name: params.name, transport: structuredClone(params.transport), tools: structuredClone(params.tools),
      createdAt: existing?.createdAt ?? now, updatedAt: now,
    };
    this.servers.set(key, server);
    return { server: structuredClone(server), created: !existing };
  }

  mcpServerGet(params: McpServerKeyParams): McpServerRecord | null {
    const server = this.servers.get(keyOf(params));
    return server ? structuredClone(server) : null;
  }

  mcpServerList(params: { namespace: string }): McpServerRecord[] {
    return [...this.servers.values()]
      .filter((s) => s.namespace === params.namespace)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((s) => structuredClone(s));
  }

  mcpServerRemove(params: McpServerKeyParams): boolean {
    return this.servers.delete(keyOf(params));
  }
}

function keyOf(p: McpServerKeyParams): string {
  return `${p.namespace}\u0000${p.name}`;
}
