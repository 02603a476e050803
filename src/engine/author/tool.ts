// author/: defineTool, the tool definition users write (schemas, policy, mutating), exported by src/index.ts.
// Must not import runtime/: a Tool is a value; how it is called and journaled is runtime/'s business.
import { z } from 'zod';
import type { Json } from '../../journal/run.js';
import { durationMs, type Duration } from './duration.js';
import { DefinitionError } from '../errors.js';
import { retryPolicy, TOOL_RETRY_DEFAULT, type RetryOptions, type RetryPolicy } from './retry.js';
import { zodSchemaProblem } from './zod-schema.js';

/** Recognises tools across copies of this module (a user's `waymark` may be another instance). */
export const TOOL_BRAND = Symbol.for('waymark.tool');

/** `allow` runs it; `ask` parks the run on an approval first; `deny` refuses it. */
export type ToolPolicy = 'allow' | 'ask' | 'deny';

export interface ToolCallInfo {
  /** Stable for this call across crashes and redispatches; pass it to the downstream API. */
  idempotencyKey: string;
  runId: string;
  /** Aborted when this worker loses the run (lease taken over, run cancelled), or when the attempt's `timeout` passes. */
  signal: AbortSignal;
  /**
   * The W3C `traceparent` of this attempt's span when the server traces (docs/tracing.md): send it
   * on the calls the tool makes (the built-in `http` tool does) so they join the run's trace.
   */
  traceparent?: string;
}

export interface ToolDefinition<I extends z.ZodType, R> {
  name: string;
  description: string;
  input: I;
  /**
   * Whether the tool changes the world (default true). A mutating call journals its intent before
   * it executes and is skipped in dry runs; a read-only one writes a single entry. A function
   * decides per call (the built-in `http` tool: GET and HEAD are read-only).
   */
  mutating?: boolean | ((args: z.output<I>) => boolean);
  policy?: ToolPolicy;
  /**
   * How failures of `execute` are retried (docs/workflows.md "Retries and timeouts"); default
   * `{ maxAttempts: 3, initialInterval: '1s', backoffCoefficient: 2, maxInterval: '60s' }`.
   */
  retry?: RetryOptions;
  /** Start to close of one attempt; when it passes the signal fires and the attempt fails (retryable). Default none. */
  timeout?: Duration;
  /**
   * The arguments and result are secret (default false): they are journaled sealed with
   * AES-256-GCM under a key of WAYMARK_SECRETS_KEYS, opened only when the run replays, and shown
   * redacted by GetJournal and event streams (docs/security.md "Secrets"). Errors are not sealed:
   * throw messages without secrets.
   */
  secret?: boolean;
  execute(args: z.output<I>, info: ToolCallInfo): R | Promise<R>;
}

export interface Tool<In = unknown, Out = unknown> {
  readonly [TOOL_BRAND]: true;
  readonly name: string;
  readonly description: string;
  readonly input: z.ZodType;
  /** JSON Schema of the arguments (what ListWorkflows and model providers see). */
  readonly inputSchema: Json;
  readonly policy: ToolPolicy;
  readonly retry: RetryPolicy;
  /** Per attempt, in ms; null: none. */
  readonly timeoutMs: number | null;
  /** Arguments and result journaled sealed (ToolDefinition.secret). Absent on tools of older copies: false. */
  readonly secret?: boolean;
  isMutating(args: unknown): boolean;
  execute(args: unknown, info: ToolCallInfo): Promise<Out>;
  /**
   * Served by a worker over WorkerService (docs/workers.md), not executed in this process: a
   * stand-in built from the worker's declaration, called by name through ctx.tool's remote path.
   */
  readonly remote?: boolean;
  /**
   * A tool of an MCP server (docs/mcp.md): a stand-in built from the run's pinned tool list, called
   * by its `server.tool` name through ctx.tool's MCP path.
   */
  readonly mcp?: boolean;
  /** Carries the argument type for `ctx.tool(tool, args)`; never set. */
  readonly __args?: In;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

export function defineTool<I extends z.ZodType, R>(definition: ToolDefinition<I, R>): Tool<z.input<I>, Awaited<R>> {
  const { name, description, input, execute } = definition;
  if (!TOOL_NAME.test(name)) {
    throw new DefinitionError(`tool "${name}"`, 'a tool name is 1-64 letters, digits, "_" or "-" (what model providers accept)');
  }
  const inputProblem = zodSchemaProblem(input);
  if (inputProblem) throw new DefinitionError(`tool "${name}"`, inputProblem);
  const policy = definition.policy ?? 'allow';
  if (!['allow', 'ask', 'deny'].includes(policy)) throw new DefinitionError(`tool "${name}"`, `policy must be allow, ask or deny, not "${policy}"`);
  const mutating = definition.mutating ?? true;
  const retry = retryPolicy(TOOL_RETRY_DEFAULT, definition.retry);
  if (Array.isArray(retry)) throw new DefinitionError(`tool "${name}"`, retry.map((v) => `${v.field}: ${v.description}`).join('; '));
  let timeoutMs: number | null = null;
  if (definition.timeout !== undefined) {
    try {
      timeoutMs = durationMs(definition.timeout);
    } catch (error) {
      throw new DefinitionError(`tool "${name}"`, `timeout: ${(error as Error).message}`);
    }
    if (timeoutMs < 1) throw new DefinitionError(`tool "${name}"`, 'timeout: must be at least 1ms');
  }
  return Object.freeze({
    [TOOL_BRAND]: true as const,
    name,
    description,
    input,
    inputSchema: JSON.parse(JSON.stringify(z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }))) as Json,
    policy,
    retry,
    timeoutMs,
    secret: definition.secret === true,
    isMutating: (args: unknown) => (typeof mutating === 'function' ? mutating(args as z.output<I>) : mutating),
    execute: async (args: unknown, info: ToolCallInfo): Promise<Awaited<R>> => await execute(args as z.output<I>, info),
  });
}

export function isTool(value: unknown): value is Tool {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[TOOL_BRAND] === true;
}
