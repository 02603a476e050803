import type { JournalEntry } from '../journal/journal-entry.js';
import type { Json, RunError, RunStatus } from '../journal/run.js';
import type { JournalStore } from '../store/store.js';
import { contentKey, toJson } from '../engine/replay/content-key.js';
import { attemptOutcome, JournalIndex, latestAttempt, type EffectRecord } from '../engine/replay/replay.js';
import { resolutionPayload } from '../engine/runtime/suspension.js';
import type { ModelCallRecord } from './agent-loop.js';
import { runSpend, type RunSpend } from './budget.js';

/*
 * Provenance (docs/agents.md "Provenance"): for each ctx.agent of a run, its answer and the model
 * calls and tool results it drew on, read from the journal alone. An agent's calls share its scope
 * (`…/agent:<key>:<n>`); each model call's record lists the tool calls it asked for, and the tool
 * entry answering one is found by the content key ctx.tool gave it ({kind, name, args}), so the
 * link survives anything but a change of arguments. The conversation is cumulative, so the answer
 * drew on every earlier model call and tool result of its agent.
 */

export interface ProvenanceModelCall {
  /** The entry holding the response (the `ok`), or the intent while the call is in flight. */
  seq: number;
  step: number;
  model: string;
  provider: string | null;
  modelId: string | null;
  status: 'ok' | 'error' | 'in_flight';
  finishReason: string | null;
  usage: JournalEntry['usage'];
  costUsd: number | null;
  /** Tool calls this response asked for. */
  toolCallIds: string[];
}

export interface ProvenanceToolResult {
  toolCallId: string;
  toolName: string;
  input: Json;
  /** Seq of the model call that asked for it. */
  requestedBySeq: number;
  /** Seq of the tool's outcome entry; null when it has none (denied by a person, never run, invalid). */
  seq: number | null;
  /** Seq of the approval's resolution, for a tool with policy `ask`. */
  approvalSeq: number | null;
  status: 'ok' | 'error' | 'denied' | 'invalid' | 'in_flight' | 'awaiting_approval' | 'not_run';
  value?: Json;
  error?: RunError;
  deniedBy?: string;
}

export interface AgentProvenance {
  scope: string;
  agentType: string;
  model: string;
  /** The final answer's text; null until the agent has answered. */
  answer: string | null;
  /** Seq of the model call that produced the answer. */
  answerSeq: number | null;
  /** What the answer drew on (everything in its conversation), as journal seqs. */
  drewOn: { modelCalls: number[]; toolResults: number[] };
  modelCalls: ProvenanceModelCall[];
  toolResults: ProvenanceToolResult[];
  costUsd: number;
}

export interface RunProvenance {
  runId: string;
  workflowName: string;
  status: RunStatus;
  budgetUsd: number | null;
  spend: RunSpend;
  agents: AgentProvenance[];
  /** The same for each child run, recursively. */
  children: RunProvenance[];
}

export async function runProvenance(params: { store: JournalStore; runId: string; namespace: string }): Promise<RunProvenance> {
  return provenanceOf(params.store, params.runId, params.namespace, 0);
}

async function provenanceOf(store: JournalStore, runId: string, namespace: string, depth: number): Promise<RunProvenance> {
  const run = await store.runGet({ runId, namespace });
  const entries = await store.journalList({ runId, namespace });
  const index = JournalIndex.build(runId, entries);
  const agents: AgentProvenance[] = [];
  for (const [scope, records] of index.scopes) {
    const last = scope.slice(scope.lastIndexOf('/') + 1);
    if (last.startsWith('agent:')) agents.push(agentOf(scope, records));
  }
  agents.sort((a, b) => (a.modelCalls[0]?.seq ?? 0) - (b.modelCalls[0]?.seq ?? 0));
  const children: RunProvenance[] = [];
  if (depth < 8) {
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<JournalStore['runList']>> = await store.runList({ namespace, parentRunId: runId, pageSize: 100, cursor });
      for (const child of page.runs) children.push(await provenanceOf(store, child.id, namespace, depth + 1));
      cursor = page.nextCursor;
    } while (cursor);
  }
  return {
    runId, workflowName: run.workflowName, status: run.status, budgetUsd: run.budgetUsd,
    spend: await runSpend({ store, runId, namespace }), agents, children: children.reverse(),
  };
}

function agentOf(scope: string, records: readonly EffectRecord[]): AgentProvenance {
  // Effects by content key, oldest occurrence first: the n-th identical call takes the n-th effect.
  const pool = new Map<string, EffectRecord[]>();
  for (const r of records) pool.set(r.identity.contentKey, [...(pool.get(r.identity.contentKey) ?? []), r]);
  const take = (kind: string, name: string, args: Json): EffectRecord | undefined => pool.get(contentKey({ kind, name, args }))?.shift();

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
    const attempt = latestAttempt(r);
    const outcome = attemptOutcome(attempt);
    const intent = (attempt.head.payload ?? {}) as Record<string, Json>;
    const rec = outcome?.status === 'ok' ? (outcome.payload as unknown as ModelCallRecord) : null;
    agentType = rec?.agentType ?? (typeof intent.agentType === 'string' ? intent.agentType : agentType);
    model = rec?.model ?? r.name;
    const seq = (outcome ?? attempt.head).seq;
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
  take: (kind: string, name: string, args: Json) => EffectRecord | undefined,
): ProvenanceToolResult {
  const base = { toolCallId: call.toolCallId, toolName: call.toolName, input: call.input, requestedBySeq, seq: null, approvalSeq: null };
  if (call.invalid !== undefined) return { ...base, status: 'invalid', error: { name: 'InvalidToolCall', message: call.invalid } };
  const args = toJson(call.input, 'tool arguments');
  // An `ask` tool's approval comes first (docs/journal.md: name `tool:<name>`, args {tool, args}).
  const approval = take('approval', `tool:${call.toolName}`, { tool: call.toolName, args });
  const tool = take('tool', call.toolName, args);
  const approvalAttempt = approval ? latestAttempt(approval) : null;
  const winner = approvalAttempt?.resolutions.find((e) => e.status === 'resolved') ?? null;
  const withApproval = { ...base, approvalSeq: winner?.seq ?? null };
  if (tool) {
    const outcome = attemptOutcome(latestAttempt(tool));
    if (!outcome) return { ...withApproval, status: 'in_flight', seq: latestAttempt(tool).head.seq };
    if (outcome.status === 'error') return { ...withApproval, status: 'error', seq: outcome.seq, ...(outcome.error ? { error: outcome.error } : {}) };
    const value = outcome.payload;
    if (value && typeof value === 'object' && !Array.isArray(value) && value.__denied === true) {
      return { ...withApproval, status: 'denied', seq: outcome.seq, deniedBy: String(value.deniedBy), value };
    }
    return { ...withApproval, status: 'ok', seq: outcome.seq, value };
  }
  if (approvalAttempt && !winner) return { ...withApproval, status: 'awaiting_approval' };
  if (winner) {
    const r = resolutionPayload(winner);
    const decided = (r.value ?? {}) as Record<string, Json>;
    if (decided.approved !== true) return { ...withApproval, status: 'denied', deniedBy: r.by ?? (r.source === 'timeout' ? 'timeout' : 'unknown') };
  }
  return { ...withApproval, status: 'not_run' };
}
