// runtime/: the Tool an agent's tool list holds for a tool that runs elsewhere (a remote worker, an MCP server).
// Must not execute anything: the agent host calls such a tool by name through ctx.tool's remote or MCP path.
import { z } from 'zod';
import type { Json } from '../../journal/run.js';
import { TOOL_RETRY_DEFAULT } from '../author/retry.js';
import { TOOL_BRAND, type Tool, type ToolPolicy } from '../author/tool.js';

/** What the model sees of a tool that runs elsewhere, and the policy it is called under. */
export interface StandInSpec {
  name: string;
  description: string;
  inputSchema: Json;
  policy: ToolPolicy;
  timeoutMs: number | null;
  mutating: boolean;
}

/**
 * A Tool standing for `spec` in an agent's tool list (`via`: where it really runs). Its execute
 * throws: reaching it would mean the call was not routed through ctx.tool.
 */
export function toolStandIn(spec: StandInSpec, via: 'remote' | 'mcp'): Tool {
  return Object.freeze({
    [TOOL_BRAND]: true as const,
    name: spec.name,
    description: spec.description,
    input: z.unknown(),
    inputSchema: spec.inputSchema,
    policy: spec.policy,
    retry: TOOL_RETRY_DEFAULT,
    timeoutMs: spec.timeoutMs,
    [via]: true,
    isMutating: () => spec.mutating,
    execute: async (): Promise<unknown> => {
      throw new Error(`internal: ${via === 'mcp' ? 'MCP' : 'remote'} tool "${spec.name}" was executed in process; ${via === 'mcp' ? 'it is called through ctx.tool' : 'it is dispatched to a worker'}`);
    },
  });
}
