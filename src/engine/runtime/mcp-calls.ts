// runtime/: MCP tools (docs/mcp.md): a run's pinned tool lists and one call's attempt, over the McpConnector.
// Must not speak the protocol (src/mcp does, through the MCP SDK) nor write the journal except through effect-runner.
import type { McpServerRecord } from '../../store/store.js';
import type { Json } from '../../journal/run.js';
import { canonicalJson, schemaHash, sha256Hex } from '../replay/content-key.js';
import { TOOL_RETRY_DEFAULT } from '../author/retry.js';
import type { Tool, ToolPolicy } from '../author/tool.js';
import { WaymarkError } from '../../journal/errors.js';
import { InvalidInputError, McpServerNotFoundError, McpToolDriftError, ToolNotFoundError } from '../errors.js';
import { validatePinned } from '../replay/payload-schema.js';
import { perform } from './effect-runner.js';
import type { Execution } from './execution.js';
import type { McpConnector, McpToolListing } from './mcp-connector.js';
import { toolStandIn } from './tool-stand-in.js';

export type { McpConnector, McpToolListing } from './mcp-connector.js';

/*
 * `ctx.tool('server.tool', args)` calls tool `tool` of the MCP server registered as `server` in the
 * run's namespace. The first call of a run to a server pins its tool list: a `step` effect named
 * `mcp:<server>:tools/list` whose journaled result holds, for each exposed tool, its name,
 * description, input schema, annotations and the rules the registration gave it, plus a digest of
 * them all. Every later call of the run (and every replay and resume) reads the pin, never the
 * server's current list, so a run sees one set of tools from start to end.
 */

/** A tool as a run pinned it: the listing plus the registration's rules at pin time. */
export interface McpPinnedTool extends McpToolListing {
  policy: ToolPolicy;
  mutating: boolean;
  timeoutMs: number | null;
}

export interface McpPin {
  server: string;
  /** Hex sha256 of the canonical JSON of `tools`: a changed list is a new digest. */
  digest: string;
  tools: McpPinnedTool[];
}

/** `server.tool` names an MCP tool; built-in and remote tool names have no dot. */
export function mcpToolName(name: string): { server: string; tool: string } | null {
  const dot = name.indexOf('.');
  if (dot <= 0 || dot === name.length - 1) return null;
  return { server: name.slice(0, dot), tool: name.slice(dot + 1) };
}

/**
 * A server's pin in one execution. `fresh`: listed by this execution (the listing is current);
 * otherwise it came from the journal (a replay or resume), and the first live call of this
 * execution compares the pinned tool with what the server lists now (`current`, once per server).
 */
interface PinState {
  pin: Promise<McpPin>;
  fresh: boolean;
  /** The pin's journal entry when it was replayed (for McpToolDriftError's `invalidate`). */
  seq: number | null;
  current: Promise<McpToolListing[]> | null;
}

const pins = new WeakMap<Execution, Map<string, PinState>>();

/**
 * The pin of `server` for this execution: the first call reserves the pin's identity synchronously
 * (before any await, like every ctx call) and later calls share it. On replay the pin's recorded
 * result comes back without asking the server.
 */
export function mcpPin(exec: Execution, server: string, scope: string): Promise<McpPin> {
  return pinState(exec, server, scope).pin;
}

function pinState(exec: Execution, server: string, scope: string): PinState {
  let byServer = pins.get(exec);
  if (!byServer) pins.set(exec, (byServer = new Map()));
  const known = byServer.get(server);
  if (known) return known;
  const call = exec.call('step', `mcp:${server}:tools/list`, null, scope);
  const state: PinState = { pin: null as unknown as Promise<McpPin>, fresh: false, seq: call.decision.action === 'return' ? call.decision.entry.seq : null, current: null };
  state.pin = perform(exec, call, {
    twoPhase: false,
    retry: TOOL_RETRY_DEFAULT,
    execute: async (signal) => {
      const connector = mcpConnector(exec);
      const registration = await connector.server(exec.run.namespace, server);
      if (!registration) throw new McpServerNotFoundError(server);
      const pin = pinOf(registration, await connector.listTools(registration, signal));
      state.fresh = true;
      return pin as unknown as Json;
    },
  }).then((value) => value as unknown as McpPin);
  byServer.set(server, state);
  return state;
}

/**
 * A Tool standing for MCP tool `name` in an agent's tool list (docs/agents.md "MCP tools"): what
 * the model sees (description, pinned input schema) and the pinned policy. Never executed here:
 * the agent host calls it by name through ctx.tool's MCP path.
 */
export async function mcpToolStandIn(exec: Execution, name: string, scope: string): Promise<Tool> {
  const target = mcpToolName(name)!;
  const pin = await mcpPin(exec, target.server, scope);
  const t = pin.tools.find((p) => p.name === target.tool);
  if (!t) throw new ToolNotFoundError(name);
  return toolStandIn({
    name, description: t.description, inputSchema: validatedAs2020(t.inputSchema), policy: t.policy, timeoutMs: t.timeoutMs, mutating: t.mutating,
  }, 'mcp');
}

/** The execution's connector; an execution without one (a preview, an engine built without MCP) cannot call a server. */
export function mcpConnector(exec: Execution): McpConnector {
  if (!exec.mcp) throw new McpUnavailableError();
  return exec.mcp;
}

/** Tool `tool` of a pin, with `args` checked against its pinned schema (InvalidInputError, nothing runs). */
export function mcpPinnedTool(name: string, tool: string, pin: McpPin, args: Json): McpPinnedTool {
  const t = pin.tools.find((p) => p.name === tool);
  if (!t) throw new ToolNotFoundError(name);
  const schema = validatedAs2020(t.inputSchema);
  const violations = validatePinned({ schema, schemaHash: schemaHash(schema) }, args);
  if (violations.length > 0) throw new InvalidInputError(`the arguments of tool "${name}"`, violations);
  return t;
}

/**
 * MCP servers often name draft-07 (the SDK's zod conversion does); the payload checker speaks 2020-12,
 * the MCP default, which agrees with draft-07 on the keywords tool schemas use (type, properties,
 * required, enum, items as a schema). The pin keeps the schema as listed; only the check drops `$schema`.
 */
function validatedAs2020(schema: Json): Json {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || !('$schema' in schema)) return schema;
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

/**
 * One attempt of an MCP tool call, on the server's current registration (its transport may have
 * changed; its tools are pinned). A pin from the journal is first checked against the server's
 * current list (McpToolDriftError: the call is not sent). `task`: the pinned tool supports MCP
 * tasks, and the server may answer with a task handle (mcp-tasks.ts).
 */
export async function mcpCallOnce(
  exec: Execution, target: { server: string; tool: string }, args: Json, idempotencyKey: string, signal: AbortSignal,
  options: { traceparent?: string | null; task?: boolean } = {},
): Promise<Json> {
  const connector = mcpConnector(exec);
  const server = await connector.server(exec.run.namespace, target.server);
  if (!server) throw new McpServerNotFoundError(target.server);
  const state = pins.get(exec)?.get(target.server);
  if (state && !state.fresh) {
    const current = (state.current ??= connector.listTools(server, signal));
    let listed: McpToolListing[];
    try {
      listed = await current;
    } catch (error) {
      if (state.current === current) state.current = null; // the next attempt lists again
      throw error;
    }
    const pinned = (await state.pin).tools.find((t) => t.name === target.tool);
    const now = listed.find((t) => t.name === target.tool);
    if (!now) throw new McpToolDriftError(target.server, target.tool, 'vanished', state.seq);
    if (pinned && canonicalJson(pinned.inputSchema) !== canonicalJson(now.inputSchema)) {
      throw new McpToolDriftError(target.server, target.tool, 'schema_changed', state.seq);
    }
  }
  return connector.callTool({ server, tool: target.tool, args, idempotencyKey, signal, traceparent: options.traceparent ?? null, task: options.task ?? false });
}

/** The exposed tools of a listing with the registration's rules; sorted by name so the digest is stable. */
export function pinOf(registration: McpServerRecord, listed: McpToolListing[]): McpPin {
  const rules = registration.tools;
  const exposeAll = Object.keys(rules).length === 0;
  const tools: McpPinnedTool[] = [];
  for (const t of [...listed].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const rule = rules[t.name];
    if (!rule && !exposeAll) continue;
    tools.push({
      ...t,
      policy: rule?.policy ?? 'allow',
      mutating: rule?.mutating ?? !readOnly(t.annotations),
      timeoutMs: rule?.timeoutMs ?? null,
    });
  }
  return { server: registration.name, digest: sha256Hex(canonicalJson(tools)), tools };
}

function readOnly(annotations: Json | null): boolean {
  return annotations !== null && typeof annotations === 'object' && !Array.isArray(annotations) && annotations.readOnlyHint === true;
}

/** This engine was built without an McpConnector (RunEngine's `mcp` option): it cannot call MCP servers. */
export class McpUnavailableError extends WaymarkError {
  readonly reason = 'MCP_UNAVAILABLE';
  override readonly retryable = true;
  constructor() {
    super('this engine has no MCP connector (RunEngine option `mcp`); a replica started by `waymark server` or `waymark dev` has one');
  }
}
