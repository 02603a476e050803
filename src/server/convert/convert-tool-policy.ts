import { ToolPolicy } from '../../gen/waymark/v1/worker_service_pb.js';

/* ToolPolicy <-> a tool's policy, for remote tools (WorkerService) and MCP tools (McpService) alike. */

/** The policy a ToolPolicy value means (UNSPECIFIED: allow); undefined for a value no policy has. */
export const POLICY_FROM_PROTO: Record<number, 'allow' | 'ask' | 'deny' | undefined> = {
  [ToolPolicy.UNSPECIFIED]: 'allow', [ToolPolicy.ALLOW]: 'allow', [ToolPolicy.ASK]: 'ask', [ToolPolicy.DENY]: 'deny',
};

export const POLICY_TO_PROTO = { allow: ToolPolicy.ALLOW, ask: ToolPolicy.ASK, deny: ToolPolicy.DENY } as const;
