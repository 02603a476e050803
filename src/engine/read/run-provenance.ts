// read/: GetRunProvenance: each ctx.agent's answer and what it drew on, walked over the run tree.
// Read-only: must not interpret an agent's entries itself (the agent runtime's provenance() does).
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, RunError, RunStatus } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { runEffects, type RunEffects } from './effects.js';
import { runSpend, type RunSpend } from './spend.js';

/*
 * Provenance (docs/agents.md "Provenance"), GetRunProvenance: for each ctx.agent of a run, its
 * answer and the model calls and tool results it drew on, read from the journal alone, and the
 * same for each child run. This file walks the run tree and folds the spend; what an agent's
 * entries mean is the agent runtime's to say (AgentProvenanceReader.provenance, implemented in
 * agent/provenance.ts), so the engine never reads the agent's records itself.
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

/** The agents found in one run's effects, oldest first (AgentProvenanceReader.provenance). */
export type AgentsOf = (effects: RunEffects) => AgentProvenance[];

/**
 * What an agent runtime adds to be read back by GetRunProvenance (src/agent's createAgentRuntime
 * does): pure, from the journal alone. The read side defines it, so the AgentRuntime contract
 * (author/agent-contract.ts) stays below the read side; a runtime without it lists no agents.
 */
export interface AgentProvenanceReader {
  provenance(effects: RunEffects): AgentProvenance[];
}

/** The registry's agent runtime as a provenance reader, or null when it reads none. */
export function agentsOf(runtime: object | null | undefined): AgentsOf | null {
  const read = (runtime as Partial<AgentProvenanceReader> | null | undefined)?.provenance;
  return typeof read === 'function' ? (effects) => read.call(runtime, effects) : null;
}

/** Child runs deeper than this are not followed. */
const MAX_DEPTH = 8;

/** A run's provenance and its children's; `agents` null (no agent runtime) lists no agents. */
export async function runProvenance(params: { store: JournalStore; runId: string; namespace: string; agents: AgentsOf | null }): Promise<RunProvenance> {
  return provenanceOf(params.store, params.agents, params.runId, params.namespace, 0);
}

async function provenanceOf(store: JournalStore, agentsOf: AgentsOf | null, runId: string, namespace: string, depth: number): Promise<RunProvenance> {
  const run = await store.runGet({ runId, namespace });
  const entries = await store.journalList({ runId, namespace });
  // Indexed even without an agent runtime: a corrupt journal is refused the same either way.
  const effects = runEffects(runId, entries);
  const agents = agentsOf ? agentsOf(effects) : [];
  const children: RunProvenance[] = [];
  if (depth < MAX_DEPTH) {
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<JournalStore['runList']>> = await store.runList({ namespace, parentRunId: runId, pageSize: 100, cursor });
      for (const child of page.runs) children.push(await provenanceOf(store, agentsOf, child.id, namespace, depth + 1));
      cursor = page.nextCursor;
    } while (cursor);
  }
  return {
    runId, workflowName: run.workflowName, status: run.status, budgetUsd: run.budgetUsd,
    spend: await runSpend({ store, runId, namespace }), agents, children: children.reverse(),
  };
}
