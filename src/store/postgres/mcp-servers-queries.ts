import type pg from 'pg';
import type { McpServerKeyParams, McpServerPutParams, McpServerRecord, McpToolRule, McpTransport } from '../store.js';

/* Named statements on `mcp_servers` (migration 0015): MCP server registrations (docs/mcp.md). Times are the database clock's. */

const COLUMNS = 'namespace, name, transport, tools, created_at, updated_at';

/** Inserts or replaces; `created` is true when no row was there (xmax = 0 on a fresh insert). */
export function mcpServerUpsert(p: McpServerPutParams): pg.QueryConfig {
  return {
    name: 'mcp_servers_upsert',
    text: `INSERT INTO mcp_servers (namespace, name, transport, tools, created_at, updated_at)
      VALUES ($1, $2, $3::jsonb, $4::jsonb, clock_timestamp(), clock_timestamp())
      ON CONFLICT (namespace, name) DO UPDATE SET transport = EXCLUDED.transport, tools = EXCLUDED.tools, updated_at = EXCLUDED.updated_at
      RETURNING ${COLUMNS}, (xmax = 0) AS created`,
    values: [p.namespace, p.name, JSON.stringify(p.transport), JSON.stringify(p.tools)],
  };
}

export function mcpServerSelect(p: McpServerKeyParams): pg.QueryConfig {
  return { name: 'mcp_servers_select', text: `SELECT ${COLUMNS} FROM mcp_servers WHERE namespace = $1 AND name = $2`, values: [p.namespace, p.name] };
}

export function mcpServerList(namespace: string): pg.QueryConfig {
  return { name: 'mcp_servers_list', text: `SELECT ${COLUMNS} FROM mcp_servers WHERE namespace = $1 ORDER BY name`, values: [namespace] };
}

export function mcpServerDelete(p: McpServerKeyParams): pg.QueryConfig {
  return { name: 'mcp_servers_delete', text: 'DELETE FROM mcp_servers WHERE namespace = $1 AND name = $2', values: [p.namespace, p.name] };
}

export interface McpServerRow {
  namespace: string; name: string; transport: McpTransport; tools: Record<string, McpToolRule>; created_at: Date; updated_at: Date;
}

export function toMcpServer(row: McpServerRow): McpServerRecord {
  return { namespace: row.namespace, name: row.name, transport: row.transport, tools: row.tools, createdAt: row.created_at, updatedAt: row.updated_at };
}
