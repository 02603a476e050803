import type { Json } from '../journal/run.js';
import type { AgentHost, AgentMessage, AgentOptions, AgentResult, AgentToolCall, ModelCallOutcome } from '../engine/index.js';
import { canonicalJson, sha256Hex, toJson } from '../engine/index.js';
import { durationMs } from '../engine/index.js';
import { InvalidInputError } from '../engine/index.js';
import { roundUsd } from '../engine/index.js';
import type { Tool } from '../engine/index.js';
import { BudgetExceededError, ModelPriceMissingError } from './agent-errors.js';
import { budgetChain, budgetVerdict } from './budget.js';
import { classifyModelFailure } from './model-retry.js';
import { estimateCostOf } from './prices.js';
import { callModel, type LoopDeps, type ModelCallRecord, type RecordedToolCall, type ToolSpec } from './model-call.js';

/*
 * The agent loop (docs/agents.md). The engine drives it one model call at a time: each step is
 * one model call (model-call.ts: streamed, publishing its deltas as they arrive) with tools that have no `execute` (so the SDK never runs a tool or a
 * second step itself), journaled as a `model` effect whose `ok` entry holds the response messages,
 * usage and cost. The tool calls the model asked for then run one after another, in the order it
 * listed them, through ctx.tool; their results make the next request. On replay every finished
 * call is answered from the journal, so the conversation is rebuilt without calling anyone, and
 * a crash costs at most the model call in flight.
 */

export const DEFAULT_MAX_STEPS = 10;
/** Output tokens the budget estimate assumes when the agent sets no maxOutputTokens. */
export const ESTIMATED_OUTPUT_TOKENS = 4096;

export type { LoopDeps, ModelCallRecord, RecordedToolCall, ToolSpec } from './model-call.js';

export async function runAgentLoop(
  host: AgentHost,
  request: { prompt: string | readonly AgentMessage[]; model: string; options: AgentOptions },
  deps: LoopDeps,
): Promise<AgentResult> {
  const { model, options } = request;
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) {
    throw new InvalidInputError('the options of ctx.agent', [{ field: 'maxSteps', description: 'must be a whole number of at least 1' }]);
  }
  const agentType = options.agentType ?? 'agent';
  // A fork's model (docs/forks.md): the request digest and the call's identity keep the code's
  // model, so the calls the journal answers still match; only a live call goes to this one.
  const liveModel = host.modelOverride ?? model;
  let timeoutMs: number | null = null;
  if (options.timeout !== undefined) {
    try {
      timeoutMs = durationMs(options.timeout);
    } catch (error) {
      throw new InvalidInputError('the options of ctx.agent', [{ field: 'timeout', description: (error as Error).message }]);
    }
  }
  // A name may be a remote tool's (docs/workers.md): its declaration is read from the store.
  const tools = await Promise.all((options.tools ?? []).map((t): Tool | Promise<Tool> => (typeof t === 'string' ? host.resolveTool(t) : t)));
  const byName = new Map<string, Tool>();
  for (const [i, t] of tools.entries()) {
    const name = modelToolName(t.name);
    const taken = byName.get(name);
    if (taken) throw new InvalidInputError('the options of ctx.agent', [{ field: `tools[${i}]`, description: `"${t.name}" and "${taken.name}" both reach the model as "${name}"` }]);
    byName.set(name, t);
  }
  const specs: ToolSpec[] = [...byName].map(([name, t]) => ({ name, description: t.description, inputSchema: t.inputSchema }));
  const conversation: Json[] = typeof request.prompt === 'string'
    ? [{ role: 'user', content: request.prompt }]
    : (toJson(request.prompt, 'the messages of ctx.agent') as Json[]);
  const transcript: Json[] = [];
  const toolCalls: AgentToolCall[] = [];
  const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  let costUsd = 0;
  let last: ModelCallRecord | null = null;
  let steps = 0;
  const finish = (stoppedBy: AgentResult['stoppedBy']): AgentResult => ({
    text: last?.text ?? '', finishReason: last?.finishReason ?? 'other', stoppedBy, steps, usage, costUsd: roundUsd(costUsd), toolCalls, messages: transcript,
  });

  while (steps < maxSteps) {
    const step = ++steps;
    const bodyText = canonicalJson({
      model, system: options.system ?? null, messages: conversation, tools: specs,
      maxOutputTokens: options.maxOutputTokens ?? null, temperature: options.temperature ?? null,
    });
    const requestDigest = sha256Hex(bodyText);
    // Reserved before the budget check awaits; the identity is the conversation so far.
    const call = host.modelCall(model, { request: requestDigest });
    // A dry run calls no provider (docs/journal.md "Dry runs"): nothing is spent, so no budget check.
    const dry = host.run.dryRun;
    const admission = call.live && !host.preview && !dry ? await admit(host, deps, liveModel, bodyText.length, options, call.admitted) : NOT_ADMITTED;
    const { estimate } = admission;
    const sent = [...conversation];
    let record: ModelCallRecord;
    try {
      record = (await call.perform({
        retry: options.retry,
        classify: classifyModelFailure,
        timeoutMs,
        intent: { model: liveModel, agentType, step, requestDigest, estimatedCostUsd: estimate, messages: sent.length, ...(dry ? { __dryRun: true } : {}) },
        // The reservation is committed with the intent: the next call of the tree may be admitted.
        afterIntent: admission.release,
        execute: dry
          ? async () => dryRunModelCall({ model: liveModel, agentType, step, requestDigest })
          : (info) => callModel(deps, { model: liveModel, agentType, step, requestDigest, options, messages: sent, specs, estimate }, info),
      })) as unknown as ModelCallRecord;
    } finally {
      admission.release();
    }
    last = record;
    usage.inputTokens += record.usage.inputTokens;
    usage.outputTokens += record.usage.outputTokens;
    usage.totalTokens += record.usage.totalTokens;
    costUsd += record.costUsd ?? 0;
    conversation.push(...record.messages);
    transcript.push(...record.messages);
    if (record.toolCalls.length === 0) return finish('answer');

    const parts: Json[] = [];
    for (const tc of record.toolCalls) {
      const { output, outcome } = await runToolCall(host, byName, tc);
      parts.push({ type: 'tool-result', toolCallId: tc.toolCallId, toolName: tc.toolName, output });
      toolCalls.push({ toolCallId: tc.toolCallId, toolName: byName.get(tc.toolName)?.name ?? tc.toolName, input: tc.input, outcome });
    }
    const toolMessage: Json = { role: 'tool', content: parts };
    conversation.push(toolMessage);
    transcript.push(toolMessage);
  }
  return finish('max-steps');
}

interface Admission {
  /** The call's estimated cost (null: unpriced), journaled in its intent as its reservation. */
  estimate: number | null;
  /** Gives the tree's budget lock back; idempotent. */
  release: () => void;
}

const NOT_ADMITTED: Admission = { estimate: null, release: () => {} };

/**
 * Budget admission before a live model call (docs/agents.md "Budget admission"): under the run
 * tree's budget lock, the call is admitted only when every budget on the way up still holds what
 * was spent, plus what calls in flight reserved, plus this call's estimate. The lock is held until
 * the call's intent (its reservation) is committed, so parallel branches and child runs on any
 * replica are admitted one at a time. A refusal is journaled as a `budget_exceeded` event, then
 * thrown. A run with no budget and no parent skips the journal read; a redispatched call was
 * admitted when its intent was written.
 */
async function admit(host: AgentHost, deps: LoopDeps, model: string, chars: number, options: AgentOptions, admitted: boolean): Promise<Admission> {
  const price = deps.catalog.price(model);
  const estimate = price ? estimateCostOf(price, { chars, maxOutputTokens: options.maxOutputTokens ?? ESTIMATED_OUTPUT_TOKENS }) : null;
  if (admitted || (host.run.budgetUsd === null && host.run.parentRunId === null)) return { estimate, release: () => {} };
  const { chain, rootRunId, budgeted } = await host.read((store) => budgetChain({ store, run: host.run }));
  if (!budgeted) return { estimate, release: () => {} };
  const release = await host.budgetLock(rootRunId);
  // A failed read stops the execution (it never settles); the host releases the lock then.
  const verdict = await host.read((store) => budgetVerdict({ store, chain, estimateUsd: estimate }));
  if (verdict.kind === 'within') return { estimate, release };
  release();
  if (verdict.kind === 'unpriced') throw new ModelPriceMissingError(model, verdict.budgetRunId);
  const { budgetRunId, budgetUsd, spentUsd, reservedUsd, estimatedCostUsd } = verdict;
  await host.emit({ type: 'budget_exceeded', runId: host.run.id, budgetRunId, budgetUsd, spentUsd, reservedUsd, estimatedCostUsd, model });
  throw new BudgetExceededError(budgetRunId, budgetUsd, spentUsd, estimatedCostUsd, model, reservedUsd);
}

/**
 * The stand-in for a model call in a dry run: journaled like a call (so a replay answers it), with
 * the `__dryRun` marker, no text, no tool calls (the agent's turn ends here), no usage and no cost.
 */
function dryRunModelCall(req: { model: string; agentType: string; step: number; requestDigest: string }): ModelCallOutcome {
  const record: ModelCallRecord & { __dryRun: true } = {
    __dryRun: true, model: req.model, provider: 'dry-run', modelId: req.model, agentType: req.agentType, step: req.step,
    requestDigest: req.requestDigest, messages: [], text: '', finishReason: 'other', toolCalls: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 }, costUsd: null, usageReported: false,
  };
  return { value: toJson(record, 'a model call record'), usage: null, costUsd: null };
}

async function runToolCall(host: AgentHost, byName: Map<string, Tool>, tc: RecordedToolCall): Promise<{ output: Json; outcome: AgentToolCall['outcome'] }> {
  const tool = byName.get(tc.toolName);
  if (tc.invalid !== undefined || !tool) {
    return { output: { type: 'error-text', value: tc.invalid ?? `there is no tool named "${tc.toolName}"` }, outcome: 'invalid' };
  }
  const outcome = await host.callTool(tool, tc.input, tc.toolCallId);
  switch (outcome.status) {
    case 'ok':
      return { output: { type: 'json', value: outcome.value }, outcome: 'ok' };
    case 'denied':
      return { output: { type: 'json', value: outcome.denial as unknown as Json }, outcome: 'denied' };
    case 'error':
      return { output: { type: 'error-text', value: `${outcome.error.name}: ${outcome.error.message}` }, outcome: 'error' };
  }
}

const MODEL_TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The name a tool has for the model. Providers accept letters, digits, "_" and "-" (up to 64), so
 * an MCP tool `billing.refund` is offered as `billing__refund`; every other character becomes "_"
 * (docs/agents.md "MCP tools"). Names that already fit are sent as they are, so the request digest
 * of an agent without MCP tools is what it always was.
 */
export function modelToolName(name: string): string {
  if (MODEL_TOOL_NAME.test(name)) return name;
  const dot = name.indexOf('.');
  const wire = dot > 0 ? `${name.slice(0, dot)}__${name.slice(dot + 1)}` : name;
  return wire.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}
