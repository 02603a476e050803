import type { McpServerKeyParams, McpServerPutParams, McpServerPutResult, McpServerRecord } from '../mcp-server-params.js';
import * as mq from './mcp-servers-queries.js';
import type { PgAccess } from './pg-access.js';

/* PostgresStore's MCP server registrations (McpServerOps in mcp-server-params.ts documents each). */

export async function mcpServerPut(db: PgAccess, params: McpServerPutParams): Promise<McpServerPutResult> {
  const row = (await db.query<mq.McpServerRow & { created: boolean }>(mq.mcpServerUpsert(params))).rows[0]!;
  return { server: mq.toMcpServer(row), created: row.created };
}

export async function mcpServerGet(db: PgAccess, params: McpServerKeyParams): Promise<McpServerRecord | null> {
  const row = (await db.query<mq.McpServerRow>(mq.mcpServerSelect(params))).rows[0];
  return row ? mq.toMcpServer(row) : null;
}

export async function mcpServerList(db: PgAccess, params: { namespace: string }): Promise<McpServerRecord[]> {
  return (await db.query<mq.McpServerRow>(mq.mcpServerList(params.namespace))).rows.map(mq.toMcpServer);
}

export async function mcpServerRemove(db: PgAccess, params: McpServerKeyParams): Promise<boolean> {
  return ((await db.query(mq.mcpServerDelete(params))).rowCount ?? 0) > 0;
}
