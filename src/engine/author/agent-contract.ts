// author/: the AgentRuntime contract between the engine and the agent loop of src/agent, and what ctx.agent takes and returns (types only).
// Must not import src/agent or the AI SDK: src/agent implements this, the Registry carries it.
import type { Logger } from 'pino';
import type { Usage } from '../../journal/journal-entry.js';
import type { Json, Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import type { Duration } from './duration.js';
import type { FailureClass, RetryOptions } from './retry.js';
import type { Tool } from './tool.js';

/*
 * The seam between the engine and the agent loop (docs/agents.md). `ctx.agent` belongs to the
 * workflow API, but the loop itself (model providers, prices, budgets) lives in src/agent, which
 * the engine must not import. So the engine defines this contract: an AgentRuntime, handed to the
 * Registry by whoever composes the server (`new Registry({ agent: createAgentRuntime() })`), runs
 * the loop over an AgentHost, the journaled primitives the engine lends it, bound to the agent's
 * scope. Nothing here knows the AI SDK.
 */

/** A message of the conversation, in the AI SDK's ModelMessage shape (JSON). */
export interface AgentMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: unknown;
  [extra: string]: unknown;
}

export interface AgentOptions {
  /**
   * A model by name, resolved from configuration: `openai:gpt-4o-mini`, `anthropic:claude-haiku-4-5`,
   * `<endpoint>:<model>` for an OpenAI-compatible endpoint, `scripted:auto`, `default`, or an alias.
   */
  model: string;
  system?: string;
  /** The tools the model may call: Tool values or names of registered tools. */
  tools?: readonly (Tool | string)[];
  /** Most model calls in this loop (default 10). */
  maxSteps?: number;
  /** Names the agent in the journal, events and provenance (default `agent`). */
  agentType?: string;
  /** Sent to the model; also the output side of the budget estimate (default 4096 there). */
  maxOutputTokens?: number;
  temperature?: number;
  /**
   * How the loop's model calls are retried: transient provider errors only (408, 409, 429, 5xx,
   * connection errors), honouring Retry-After (docs/workflows.md "Retries and timeouts"). Default
   * 3 attempts, 1 s, ×2, max 60 s. The agent's tools follow their own policies.
   */
  retry?: RetryOptions;
  /** Start to close of one model call attempt; default the runtime's (300 s). */
  timeout?: Duration;
}

export interface AgentToolCall {
  toolCallId: string;
  toolName: string;
  input: Json;
  /** `invalid`: the model named an unknown tool or sent arguments that are not JSON. */
  outcome: 'ok' | 'denied' | 'error' | 'invalid';
}

export interface AgentResult {
  /** The text of the last model call: the answer. */
  text: string;
  /** The last model call's finish reason (`stop`, `length`, `tool-calls`, …). */
  finishReason: string;
  /** `answer`: the model stopped calling tools; `max-steps`: the loop ran out of model calls. */
  stoppedBy: 'answer' | 'max-steps';
  /** Model calls made or replayed. */
  steps: number;
  usage: { inputTokens: number; outputTokens: number; totalTokens: number };
  /** Sum of this loop's model-call costs (calls without a known price count 0). */
  costUsd: number;
  toolCalls: AgentToolCall[];
  /** The conversation after the prompt: assistant and tool messages. */
  messages: Json[];
}

/** What a denied tool call returns to the model (DESIGN "Agents"); the turn goes on. */
export interface ToolDenial {
  __denied: true;
  toolName: string;
  deniedBy: string;
  message: string;
}

export type ToolOutcome =
  | { status: 'ok'; value: Json }
  | { status: 'denied'; denial: ToolDenial }
  | { status: 'error'; error: { name: string; message: string } };

/** What a model call hands back to be journaled: the record, and the `usage`/`costUsd` columns. */
export interface ModelCallOutcome {
  value: Json;
  usage: Usage | null;
  costUsd: number | null;
}

/**
 * Where a live model call attempt publishes its deltas as they arrive (docs/agents.md "Token
 * streams"). Fire and forget: deltas are not the journal, the call's recorded result is.
 */
export interface ModelDeltaSink {
  text(text: string): void;
  /** A piece of a tool call's argument text. */
  toolInput(toolCallId: string, toolName: string, text: string): void;
}

/** A model call whose identity is reserved; `perform` runs it live or answers it from the journal. */
export interface ModelCall {
  /** True when the journal cannot answer it: performing it calls the model (and may cost money). */
  readonly live: boolean;
  /**
   * True when the call's intent is already in the journal (a redispatch after a crash): it was
   * admitted against the budget when that intent was written, and its reservation still stands.
   */
  readonly admitted: boolean;
  readonly idempotencyKey: string;
  perform(params: {
    /** The `running` entry's payload, committed before the model is called. */
    intent: Json;
    /** Called once before the model is called, when the intent is committed (or will not be). */
    afterIntent?: () => void;
    execute: (info: { idempotencyKey: string; signal: AbortSignal; deltas: ModelDeltaSink }) => Promise<ModelCallOutcome>;
    /** The call's retry policy (AgentOptions.retry) over the model-call default. */
    retry?: RetryOptions;
    /** Which failures are transient: the runtime knows its providers' errors, the engine does not. */
    classify?: (error: unknown) => FailureClass;
    /** Start to close of one attempt, in ms. */
    timeoutMs?: number | null;
  }): Promise<Json>;
}

/** The journaled primitives an agent loop runs on, bound to the agent's scope. */
export interface AgentHost {
  readonly run: Run;
  /** `…/agent:<key>:<n>`: every model and tool call of this loop is journaled here. */
  readonly scope: string;
  /** True in a replay-strict preview: nothing may run live, and the store is not read. */
  readonly preview: boolean;
  /**
   * The model every live model call uses instead of the one the code names (a fork's `model`,
   * the run's `waymark.model` label, docs/forks.md); null: the code's. Calls the journal answers
   * keep their identity (the code's model), so a fork replays its kept calls and only the calls it
   * makes anew go to this model.
   */
  readonly modelOverride: string | null;
  readonly logger: Logger;
  /** Aborted when this worker loses the run. */
  readonly signal: AbortSignal;
  /** A registered tool by name (ToolNotFoundError otherwise). */
  tool(name: string): Tool;
  /** An in-process tool, or a remote tool's stand-in from its declaration (docs/workers.md); ToolNotFoundError otherwise. */
  resolveTool(name: string): Promise<Tool>;
  /** Reserves the next model call of this scope, synchronously (kind `model`, `args` hashed into its key). */
  modelCall(name: string, args: Json): ModelCall;
  /**
   * Calls a tool through the durable tool path (ctx.tool: validation, policy, idempotency key).
   * A denial (policy `deny`, a person, a timeout) and a tool's failure come back as outcomes.
   */
  /** `toolCallId`: the model's id for the call, for its span (never journaled). */
  callTool(tool: Tool, args: unknown, toolCallId?: string): Promise<ToolOutcome>;
  /** ctx.emit in this scope. */
  emit(event: { type: string; [key: string]: unknown }): Promise<void>;
  /** A store read the next decision depends on; a failure stops the execution (never fails the run). */
  read<T>(fn: (store: JournalStore) => Promise<T>): Promise<T>;
  /**
   * Takes the budget lock of the run tree rooted at `rootRunId` (JournalStore.budgetLock) and
   * resolves with its release (idempotent); the lock is given back when the execution ends anyway.
   */
  budgetLock(rootRunId: string): Promise<() => void>;
}

export interface AgentRuntime {
  /** The canonical name of a model (aliases and `default` resolved). Pure: replicas must agree. */
  resolveModel(name: string): string;
  run(host: AgentHost, request: { prompt: string | readonly AgentMessage[]; model: string; options: AgentOptions }): Promise<AgentResult>;
}
