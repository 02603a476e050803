-- 0015_mcp_servers: MCP servers registered per namespace (docs/mcp.md). Forward-only.

-- One row per (namespace, name). `transport` is {kind: 'http', url, headers} or
-- {kind: 'stdio', command, args, env}; `tools` maps each exposed tool to {policy, mutating,
-- timeoutMs} (an empty object exposes every tool). Both are checked by the API before they are stored.
CREATE TABLE mcp_servers (
  namespace  text NOT NULL,
  name       text NOT NULL,
  transport  jsonb NOT NULL,
  tools      jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, name)
);
