// runtime/: what a flow's MCP tool names (`server.tool`) refer to at registration: the namespace's registrations, and the server's list when a registration exposes every tool.
// Must not write anything or speak the protocol: it reads the store and asks the McpConnector.
import type { JournalStore } from '../../store/store.js';
import type { McpConnector } from './mcp-connector.js';
import { mcpToolName } from './mcp-calls.js';
import type { FlowDefinition } from '../flow/flow-definition.js';

/** How long registration waits for a server's tool list before accepting the name unchecked. */
export const FLOW_MCP_LIST_TIMEOUT_MS = 5_000;

/**
 * For each MCP tool name a flow uses (tool nodes and agent nodes' tools), null when it exists, or
 * why not (docs/flows.md "Validation"). A registration that lists its tools is checked without
 * the network. One that exposes every tool makes registration ask the server; when the server
 * cannot answer in time the name is accepted, and a run that calls a missing tool fails at its
 * pin with ToolNotFoundError, as code does.
 */
export async function flowMcpTools(params: { store: JournalStore; mcp: McpConnector | null; namespace: string; flow: FlowDefinition }): Promise<Map<string, string | null>> {
  const { store, mcp, namespace, flow } = params;
  const names = new Set<string>();
  for (const node of flow.nodes ?? []) {
    if (typeof node.tool?.tool === 'string' && mcpToolName(node.tool.tool)) names.add(node.tool.tool);
    for (const t of node.agent?.tools ?? []) if (typeof t === 'string' && mcpToolName(t)) names.add(t);
  }
  const found = new Map<string, string | null>();
  if (names.size === 0) return found;
  const servers = new Map((await store.mcpServerList({ namespace })).map((s) => [s.name, s]));
  const listed = new Map<string, Promise<Set<string> | null>>();
  for (const name of names) {
    const { server, tool } = mcpToolName(name)!;
    const registration = servers.get(server);
    if (!registration) {
      found.set(name, `names MCP server "${server}", which is not registered in this namespace (waymark mcp add ${server} …, docs/mcp.md)`);
      continue;
    }
    const rules = Object.keys(registration.tools);
    if (rules.length > 0) {
      found.set(name, rules.includes(tool) ? null : `names tool "${tool}", which MCP server "${server}" does not expose (its registration lists ${rules.map((r) => `"${r}"`).join(', ')})`);
      continue;
    }
    let list = listed.get(server);
    if (!list) listed.set(server, (list = listOrNull(mcp, registration)));
    const tools = await list;
    found.set(name, tools === null || tools.has(tool) ? null : `names tool "${tool}", which MCP server "${server}" does not list`);
  }
  return found;
}

async function listOrNull(mcp: McpConnector | null, registration: Parameters<McpConnector['listTools']>[0]): Promise<Set<string> | null> {
  if (!mcp) return null;
  try {
    return new Set((await mcp.listTools(registration, AbortSignal.timeout(FLOW_MCP_LIST_TIMEOUT_MS))).map((t) => t.name));
  } catch {
    return null;
  }
}
