import { generateText, jsonSchema, streamText, tool as aiTool, type JSONSchema7, type ModelMessage, type ToolSet } from 'ai';
import type { Json } from '../journal/run.js';
import type { AgentOptions, ModelCallOutcome, ModelDeltaSink } from '../engine/index.js';
import { toJson } from '../engine/index.js';
import type { LanguageModelV3 } from './language-model.js';
import type { ModelCatalog } from './model-catalog.js';
import { costOf } from './prices.js';

/*
 * One live model call of the agent loop. A model that streams (every configured provider, the
 * built-in scripts, a model marked with streamingModel()) is called with `streamText`: each text
 * and tool-argument delta goes to the attempt's sink as it arrives (docs/agents.md "Token
 * streams"), and the record journaled at the end is built from the SDK's own totals, exactly as
 * generateText's, so what a replay returns never depends on the deltas. A model given in code
 * without the mark is called with `generateText` and publishes nothing: a mock that only
 * implements doGenerate keeps working.
 */

/** The `ok` payload of a model entry. */
export interface ModelCallRecord {
  /** The Waymark name (`openai:gpt-4o-mini`); `provider`/`modelId` are what the SDK reported. */
  model: string;
  provider: string;
  modelId: string;
  agentType: string;
  step: number;
  /** sha256 of the canonical request (model, system, messages, tools, settings); prompts are not journaled. */
  requestDigest: string;
  /** The assistant message(s) of the response, as the next request sends them. */
  messages: Json[];
  text: string;
  finishReason: string;
  toolCalls: RecordedToolCall[];
  usage: { inputTokens: number; outputTokens: number; totalTokens: number; cachedInputTokens: number; reasoningTokens: number };
  costUsd: number | null;
  /** False when the provider reported no token counts: `costUsd` is then the pre-call estimate. */
  usageReported: boolean;
}

export interface RecordedToolCall {
  toolCallId: string;
  toolName: string;
  input: Json;
  /** Why the SDK could not parse the call (unknown tool, arguments not JSON); absent when valid. */
  invalid?: string;
}

export interface LoopDeps {
  catalog: ModelCatalog;
  /** The SDK's in-memory retries within one attempt (default 0: the engine retries durably, one journaled attempt each). */
  maxRetries: number;
  /** A model call taking longer is aborted and recorded as failed (a resume retries it). */
  timeoutMs: number;
}

export interface ToolSpec {
  name: string;
  description: string;
  inputSchema: Json;
}

export interface ModelCallRequest {
  model: string;
  agentType: string;
  step: number;
  requestDigest: string;
  options: AgentOptions;
  messages: Json[];
  specs: ToolSpec[];
  estimate: number | null;
}

/** What both SDK calls end with, awaited: the parts of the record. */
interface CallTotals {
  text: string;
  finishReason: string;
  usage: Awaited<ReturnType<typeof generateText>>['usage'];
  toolCalls: Awaited<ReturnType<typeof generateText>>['toolCalls'];
  response: { modelId: string; messages: readonly { role: string }[] };
}

export async function callModel(
  deps: LoopDeps, req: ModelCallRequest, info: { idempotencyKey: string; signal: AbortSignal; deltas: ModelDeltaSink },
): Promise<ModelCallOutcome> {
  const lm = deps.catalog.languageModel(req.model);
  const tools: ToolSet = Object.fromEntries(req.specs.map((s) => [s.name, aiTool({ description: s.description, inputSchema: jsonSchema(s.inputSchema as JSONSchema7) })]));
  const { system, maxOutputTokens, temperature } = req.options;
  const settings = {
    model: lm,
    messages: req.messages as unknown as ModelMessage[],
    ...(system !== undefined ? { system } : {}),
    ...(req.specs.length > 0 ? { tools } : {}),
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    maxRetries: deps.maxRetries,
    timeout: deps.timeoutMs,
    abortSignal: info.signal,
    // The same on a redispatch after a crash: a gateway that honours it can deduplicate.
    headers: { 'Idempotency-Key': info.idempotencyKey },
  };
  const totals = deps.catalog.streams(req.model) ? await streamed(settings, info.deltas) : await generateText(settings);
  return recordOf(deps, req, lm, totals);
}

/** streamText, publishing deltas as they arrive; a failure the stream reports is thrown, as generateText would throw it. */
async function streamed(settings: Parameters<typeof streamText>[0], deltas: ModelDeltaSink): Promise<CallTotals> {
  let failure: { error: unknown } | null = null;
  // onError: the stream's error part carries it; without this the SDK also prints it to stderr.
  const result = streamText({ ...settings, onError: () => {} });
  const toolNames = new Map<string, string>();
  for await (const part of result.fullStream) {
    switch (part.type) {
      case 'text-delta':
        deltas.text(part.text);
        break;
      case 'tool-input-start':
        toolNames.set(part.id, part.toolName);
        break;
      case 'tool-input-delta':
        deltas.toolInput(part.id, toolNames.get(part.id) ?? '', part.delta);
        break;
      case 'error':
        failure ??= { error: part.error };
        break;
      case 'abort':
        failure ??= { error: settings.abortSignal?.reason ?? new Error('the model call was aborted') };
        break;
    }
  }
  if (failure) throw failure.error;
  const [text, finishReason, usage, toolCalls, response] = await Promise.all([result.text, result.finishReason, result.usage, result.toolCalls, result.response]);
  return { text, finishReason, usage, toolCalls, response };
}

function recordOf(deps: LoopDeps, req: ModelCallRequest, lm: LanguageModelV3, result: CallTotals): ModelCallOutcome {
  const u = result.usage;
  const inputTokens = u.inputTokens ?? 0;
  const outputTokens = u.outputTokens ?? 0;
  const tokens = {
    inputTokens, outputTokens, totalTokens: u.totalTokens ?? inputTokens + outputTokens,
    cachedInputTokens: u.inputTokenDetails?.cacheReadTokens ?? 0, reasoningTokens: u.outputTokenDetails?.reasoningTokens ?? 0,
  };
  const price = deps.catalog.price(req.model);
  // A provider that reports no usage is charged its estimate, so a budget still counts the call.
  const usageReported = u.inputTokens !== undefined || u.outputTokens !== undefined;
  const cost = !price ? null : usageReported ? costOf(price, tokens) : req.estimate;
  const record: ModelCallRecord = {
    model: req.model, provider: lm.provider, modelId: result.response.modelId || lm.modelId, agentType: req.agentType, step: req.step,
    requestDigest: req.requestDigest,
    // Only the assistant message: the SDK's own tool message (errors of invalid calls) is rebuilt
    // by the loop with every result, in the order the model listed the calls.
    messages: toJson(result.response.messages.filter((m) => m.role === 'assistant'), 'the response of a model call') as Json[],
    text: result.text,
    finishReason: result.finishReason,
    toolCalls: result.toolCalls.filter((c) => !c.providerExecuted).map((c) => ({
      toolCallId: c.toolCallId, toolName: c.toolName, input: toJson(c.input ?? null, `the arguments of tool call ${c.toolCallId}`),
      ...(c.dynamic && c.invalid ? { invalid: describeError(c.error) } : {}),
    })),
    usage: tokens,
    costUsd: cost,
    usageReported,
  };
  return { value: toJson(record, 'a model call record'), usage: { inputTokens, outputTokens, totalTokens: tokens.totalTokens }, costUsd: cost };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error ?? 'the tool call could not be parsed');
}
