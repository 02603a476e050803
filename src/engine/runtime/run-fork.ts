// runtime/: ForkRun's writes and preview (docs/forks.md): a new run from a source run's journal up to a fork point.
// Must not execute the fork (the caller hands its lease to the driver) nor change the source, which it only reads.
import type { Logger } from 'pino';
import { FORK_LABELS } from '../../journal/fork-labels.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Lease, Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { toJson } from '../replay/content-key.js';
import { InvalidForkError, InvalidInputError } from '../errors.js';
import { forkPlan, type ForkDecision, type ForkPlan } from '../replay/fork-plan.js';
import { zodViolations } from '../replay/payload-schema.js';
import type { Registry } from '../registry.js';
import type { Workflow } from '../author/workflow.js';
import type { RemoteCalls } from './remote-calls.js';
import { replayHistory, type ReplayPreview } from './resume-preview.js';

export interface RunForkParams {
  namespace: string;
  sourceRunId: string;
  /** The seq to fork at: any entry of an effect names that effect (docs/forks.md). */
  at: number;
  /** The fork's input; absent: the source's. */
  input?: unknown;
  /** The version the fork runs on: the one this server serves for the workflow. Absent: the source's pinned version and digest. */
  workflowVersion?: string | null;
  /** The model every live ctx.agent model call of the fork uses (the `waymark.model` label). Absent: the source's, if it had one. */
  model?: string | null;
  /** A decision for the approval at the fork point, journaled as its resolution. */
  decision?: ForkDecision | null;
  idempotencyKey?: string | null;
  /** The fork's budget; absent: the source's. */
  budgetUsd?: number | null;
  /** Added to the source's labels. */
  labels?: Record<string, string>;
}

/** What ForkRun with dry_run answers: what the fork keeps, redoes and costs, with nothing written. */
export interface ForkPreview {
  /** The fork point after moving to its effect's first entry. */
  forkSeq: number;
  /** Source entries the fork keeps as recorded results (seq 0..kept-1). */
  kept: number;
  /** Source entries it does not keep. */
  dropped: number;
  /** Kept effects it runs again as its own (in flight at the fork point, or a wait on the source's child or worker). */
  rerun: number[];
  /** What the kept entries cost the source: recorded, never paid again. */
  keptCostUsd: number;
  /** What the source spent on the entries the fork drops: what redoing them cost once. */
  droppedCostUsd: number;
  /** The replay-strict pass over what the fork starts with (ResumeRun's dry run): its hits, and the first call it makes live. */
  replay: ReplayPreview;
}

/** A fork ready to create: the run's fields, its first entries and how they were chosen. */
export interface ForkDraft {
  source: Run;
  workflow: Workflow;
  plan: ForkPlan;
  run: Pick<Run, 'workflowName' | 'workflowVersion' | 'workflowDigest' | 'input' | 'labels' | 'budgetUsd' | 'dryRun'>;
  sourceEntries: JournalEntry[];
}

/** Reads the source and decides the fork: definition, input, labels and the plan (forkPlan). Writes nothing. */
export async function forkDraft(
  deps: { store: JournalStore; registry: Registry; definitionOf: (run: Run) => Promise<Workflow> }, params: RunForkParams,
): Promise<ForkDraft> {
  const source = await deps.store.runGet({ runId: params.sourceRunId, namespace: params.namespace });
  const workflow = await deps.definitionOf(source);
  const pinned = { workflowVersion: source.workflowVersion, workflowDigest: source.workflowDigest };
  if (params.workflowVersion !== undefined && params.workflowVersion !== null && params.workflowVersion !== '') {
    if (params.workflowVersion !== workflow.version) {
      throw new InvalidForkError(source.id, 'workflow_version', `this server runs version ${workflow.version} of workflow "${workflow.name}", not ${params.workflowVersion}`);
    }
    Object.assign(pinned, { workflowVersion: workflow.version, workflowDigest: workflow.digest });
  }
  const input = params.input === undefined ? source.input : toJson(params.input, `the input of workflow "${workflow.name}"`);
  const parsed = workflow.input.safeParse(input);
  if (!parsed.success) throw new InvalidInputError(`the input of workflow "${workflow.name}"`, zodViolations(parsed.error));
  const labels: Record<string, string> = { ...source.labels, ...params.labels };
  if (params.model) labels[FORK_LABELS.model] = canonicalModel(deps.registry, source.id, params.model);
  const entries = await deps.store.journalList({ runId: source.id, namespace: params.namespace });
  const plan = forkPlan({ sourceRunId: source.id, entries, at: params.at, decision: params.decision ?? null });
  labels[FORK_LABELS.source] = source.id;
  labels[FORK_LABELS.seq] = String(plan.forkSeq);
  return {
    source, workflow, plan, sourceEntries: entries,
    run: { workflowName: source.workflowName, ...pinned, input, labels, budgetUsd: params.budgetUsd === undefined ? source.budgetUsd : params.budgetUsd, dryRun: source.dryRun },
  };
}

function canonicalModel(registry: Registry, sourceRunId: string, model: string): string {
  if (!registry.agentRuntime) return model;
  try {
    return registry.agentRuntime.resolveModel(model);
  } catch (error) {
    throw new InvalidForkError(sourceRunId, 'model', (error as Error).message);
  }
}

/** ForkRun's dry run: the plan's figures and a replay-strict pass over what the fork would start with. */
export async function forkPreview(draft: ForkDraft, deps: { registry: Registry; logger: Logger; remote: RemoteCalls }): Promise<ForkPreview> {
  const { source, plan } = draft;
  const createdAt = new Date(0);
  const entries = plan.journal.map((e, seq): JournalEntry => ({ ...e, runId: source.id, seq, createdAt }));
  const run: Run = { ...source, ...draft.run, status: 'RUNNING', output: null, error: null, nextSeq: entries.length };
  const replay = await replayHistory({ run, entries, workflow: draft.workflow, registry: deps.registry, logger: deps.logger, remote: deps.remote });
  const cost = (list: readonly JournalEntry[]) => Math.round(list.reduce((sum, e) => sum + (e.costUsd ?? 0), 0) * 1e9) / 1e9;
  return {
    forkSeq: plan.forkSeq, kept: plan.kept, dropped: plan.dropped, rerun: plan.rerun,
    keptCostUsd: cost(draft.sourceEntries.slice(0, plan.kept)), droppedCostUsd: cost(draft.sourceEntries.slice(plan.kept)), replay,
  };
}

/**
 * Creates the fork with its first entries in one store write (runCreate `journal`), under a lease
 * for this process: no executor can claim it before the entries are there. A repeated idempotency
 * key returns the first fork (created false, no lease).
 */
export async function forkCreate(
  store: JournalStore, draft: ForkDraft, params: { namespace: string; idempotencyKey?: string | null; holder: string; ttlMs: number },
): Promise<{ run: Run; created: boolean; lease: Lease | null }> {
  return store.runCreate({
    namespace: params.namespace, ...draft.run, input: draft.run.input as Json, idempotencyKey: params.idempotencyKey ?? null,
    // A run timeout starts again with the fork, as it does for a new run (the definition's).
    timeoutMs: draft.workflow.timeoutMs ?? null, leaseFor: { holder: params.holder, ttlMs: params.ttlMs }, journal: draft.plan.journal,
  });
}
