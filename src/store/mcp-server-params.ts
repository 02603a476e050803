/*
 * MCP servers registered per namespace (docs/mcp.md): how to reach one (Streamable HTTP with
 * headers, or a stdio command for local development) and which of its tools runs may call, each
 * with a policy and an optional `mutating` override. The store holds them as given; the server's
 * API checked them before mcpServerPut.
 */

/**
 * Where a replica reads a secret header value when it connects (docs/mcp.md "Authentication"):
 * its environment variable `name` (`env`), or the file at path `name` (`file`); `prefix` goes
 * before the value ("Bearer "). The reference is stored; the value never is.
 */
export interface McpSecretRef {
  source: 'env' | 'file';
  name: string;
  prefix: string;
}

/** How a replica reaches an MCP server. `headerRefs` is absent in registrations made before it existed. */
export type McpTransport =
  | { kind: 'http'; url: string; headers: Record<string, string>; headerRefs?: Record<string, McpSecretRef> }
  | { kind: 'stdio'; command: string; args: string[]; env: Record<string, string> };

/** What runs may do with one tool of a server. */
export interface McpToolRule {
  /** `allow` runs it; `ask` parks the run on an approval first; `deny` refuses it (as for built-in tools). */
  policy: 'allow' | 'ask' | 'deny';
  /** null: the tool's `readOnlyHint` annotation decides (read-only unless it says `true`, mutating otherwise). */
  mutating: boolean | null;
  /** Per attempt, in ms; null: the call's own timeout, or none. */
  timeoutMs: number | null;
}

export interface McpServerRecord {
  namespace: string;
  /** Letters, digits, "_" and "-": the prefix of its tools in `ctx.tool('server.tool', …)`. */
  name: string;
  transport: McpTransport;
  /** The tools runs may call, by name; an empty map exposes every tool of the server with policy `allow`. */
  tools: Record<string, McpToolRule>;
  createdAt: Date;
  updatedAt: Date;
}

export interface McpServerPutParams {
  namespace: string;
  name: string;
  transport: McpTransport;
  tools: Record<string, McpToolRule>;
}

export interface McpServerPutResult {
  server: McpServerRecord;
  /** false: a server of that name was replaced (its createdAt kept). */
  created: boolean;
}

export interface McpServerKeyParams {
  namespace: string;
  name: string;
}

/** MCP server registrations. Part of JournalStore (store.ts), whose contract holds for each method. */
export interface McpServerOps {
  /** Creates the registration, or replaces the one of the same (namespace, name). */
  mcpServerPut(params: McpServerPutParams): Promise<McpServerPutResult>;
  /** null when the namespace has no server of that name. */
  mcpServerGet(params: McpServerKeyParams): Promise<McpServerRecord | null>;
  /** The namespace's servers, by name. */
  mcpServerList(params: { namespace: string }): Promise<McpServerRecord[]>;
  /** Whether a registration was removed. Runs that pinned its tool list keep their journal. */
  mcpServerRemove(params: McpServerKeyParams): Promise<boolean>;
}
