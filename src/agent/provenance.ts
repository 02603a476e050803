import type { Json } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { effectContentKey, type EffectView, type RunEffects } from '../engine/index.js';
import { runProvenance as readRunProvenance, type AgentProvenance, type ProvenanceModelCall, type ProvenanceToolResult, type RunProvenance } from '../engine/index.js';
import type { ModelCallRecord } from './agent-loop.js';

/*
 * Provenance (docs/agents.md "Provenance"): what the journal says about each ctx.agent of a run,
 * read from the engine's view of its effects (engine/read/effects.ts). An agent's calls share its
 * scope (`…/agent:<key>:<n>`); each model call's record lists the tool calls it asked for, and the
 * tool entry answering one is found by the content key ctx.tool gave it ({kind, name, args}), so
 * the link survives anything but a change of arguments. The conversation is cumulative, so the
 * answer drew on every earlier model call and tool result of its agent. The engine walks the run
 * tree (engine/read/run-provenance.ts) and asks this file through the runtime's provenance() (AgentProvenanceReader).
 */

export type { AgentProvenance, ProvenanceModelCall, ProvenanceToolResult, RunProvenance };

/** The agents of one run's effects, by the seq of their first model call. */
export function agentProvenance(effects: RunEffects): AgentProvenance[] {
  const agents: AgentProvenance[] = [];
  for (const [scope, records] of effects) {
    const last = scope.slice(scope.lastIndexOf('/') + 1);
    if (last.startsWith('agent:')) agents.push(agentOf(scope, records));
  }
  return agents.sort((a, b) => (a.modelCalls[0]?.seq ?? 0) - (b.modelCalls[0]?.seq ?? 0));
}

/** A run's provenance and its children's, read from `store` (GetRunProvenance without a server). */
export function runProvenance(params: { store: JournalStore; runId: string; namespace: string }): Promise<RunProvenance> {
  return readRunProvenance({ ...params, agents: agentProvenance });
}

function agentOf(scope: string, records: readonly EffectView[]): AgentProvenance {
  // Effects by content key, oldest occurrence first: the n-th identical call takes the n-th effect.
  const pool = new Map<string, EffectView[]>();
  for (const r of records) pool.set(r.contentKey, [...(pool.get(r.contentKey) ?? []), r]);
  const take = (kind: string, name: string, args: Json): EffectView | undefined => pool.get(effectContentKey({ kind, name, args }))?.shift();

  const modelCalls: ProvenanceModelCall[] = [];
  const toolResults: ProvenanceToolResult[] = [];
  let agentType = 'agent';
  let model = '';
  let answer: AgentProvenance['answer'] = null;
  let answerSeq: number | null = null;
  let costUsd = 0;
  const drewOn = { modelCalls: [] as number[], toolResults: [] as number[] };
  for (const r of records) {
    if (r.kind !== 'model') continue;
    const outcome = r.outcome;
    const intent = (r.head.payload ?? {}) as Record<string, Json>;
    const rec = outcome?.status === 'ok' ? (outcome.payload as unknown as ModelCallRecord) : null;
    agentType = rec?.agentType ?? (typeof intent.agentType === 'string' ? intent.agentType : agentType);
    model = rec?.model ?? r.name;
    const seq = (outcome ?? r.head).seq;
    costUsd += outcome?.costUsd ?? 0;
    modelCalls.push({
      seq, step: rec?.step ?? (typeof intent.step === 'number' ? intent.step : modelCalls.length + 1), model,
      provider: rec?.provider ?? null, modelId: rec?.modelId ?? null,
      status: rec ? 'ok' : outcome?.status === 'error' ? 'error' : 'in_flight',
      finishReason: rec?.finishReason ?? null, usage: outcome?.usage ?? null, costUsd: outcome?.costUsd ?? null,
      toolCallIds: rec ? rec.toolCalls.map((c) => c.toolCallId) : [],
    });
    if (!rec) continue;
    if (rec.toolCalls.length === 0) {
      answer = rec.text;
      answerSeq = seq;
      drewOn.modelCalls = modelCalls.map((m) => m.seq);
      drewOn.toolResults = toolResults.flatMap((t) => (t.seq !== null ? [t.seq] : t.approvalSeq !== null ? [t.approvalSeq] : []));
      continue;
    }
    for (const call of rec.toolCalls) toolResults.push(toolResultOf(call, seq, take));
  }
  return { scope, agentType, model, answer, answerSeq, drewOn, modelCalls, toolResults, costUsd: Math.round(costUsd * 1e10) / 1e10 };
}

function toolResultOf(
  call: ModelCallRecord['toolCalls'][number],
  requestedBySeq: number,
  take: (kind: string, name: string, args: Json) => EffectView | undefined,
): ProvenanceToolResult {
  const base = { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, requestedBySeq, seq: null, approvalSeq: null };
  if (call.invalid !== undefined) return { ...base, status: 'invalid', error: { name: 'InvalidToolCall', message: call.invalid } };
  // Read back from the journal, so already JSON (a missing input reads as null, as ctx.tool hashed it).
  const args: Json = call.input ?? null;
  // An `ask` tool's approval comes first (docs/journal.md: name `tool:<name>`, args {tool, args}).
  const approval = take('approval', `tool:${call.toolName}`, { tool: call.toolName, args });
  const tool = take('tool', call.toolName, args);
  const decision = approval?.resolution ?? null;
  const withApproval = { ...base, approvalSeq: decision?.seq ?? null };
  if (tool) {
    const outcome = tool.outcome;
    if (!outcome) return { ...withApproval, status: 'in_flight', seq: tool.head.seq };
    if (outcome.status === 'error') return { ...withApproval, status: 'error', seq: outcome.seq, ...(outcome.error ? { error: outcome.error } : {}) };
    const value = outcome.payload;
    if (value && typeof value === 'object' && !Array.isArray(value) && value.__denied === true) {
      return { ...withApproval, status: 'denied', seq: outcome.seq, deniedBy: String(value.deniedBy), value };
    }
    return { ...withApproval, status: 'ok', seq: outcome.seq, value };
  }
  if (approval && !decision) return { ...withApproval, status: 'awaiting_approval' };
  if (decision) {
    const decided = (decision.value ?? {}) as Record<string, Json>;
    if (decided.approved !== true) return { ...withApproval, status: 'denied', deniedBy: decision.by ?? (decision.source === 'timeout' ? 'timeout' : 'unknown') };
  }
  return { ...withApproval, status: 'not_run' };
}
