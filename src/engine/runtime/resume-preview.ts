// runtime/: replay-strict passes (ResumeRun's dry run, the golden tests): an Execution in preview mode.
// Must not write or make a live call: the first call that would go live ends the pass.
import { pino, type Logger } from 'pino';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Run, RunError } from '../../journal/run.js';
import { toJson } from '../replay/content-key.js';
import { errorRecord } from '../replay/error-codec.js';
import { InvalidInputError } from '../errors.js';
import { Execution, type CallObserver } from './execution.js';
import type { PreviewCounts, PreviewItem } from './preview-tally.js';
import { zodViolations } from '../replay/payload-schema.js';
import type { Registry } from '../registry.js';
import { JournalIndex, latestAttempt } from '../replay/replay.js';
import { invalidationEntries } from '../replay/invalidation.js';
import { waitingOf, type Waiting } from './suspension.js';
import type { RemoteCalls } from './remote-calls.js';
import type { Workflow, WorkflowContext } from '../author/workflow.js';
import { WorkflowContextImpl } from './workflow-context.js';

/*
 * Replay-strict passes over a journal: ResumeRun's dry run and the golden-journal tests. The body
 * runs against the journal with zero live calls and zero writes; the first call that would go
 * live (a miss, or a rerun of an entry) ends the pass.
 */

export interface ReplayPreview {
  /** Calls the journal answered: values, recorded errors, resolutions, waits that park again. */
  hits: number;
  /** Calls with no journal entry (each would run live; the first ends the preview). */
  misses: number;
  /** Journal effects the preview did not reach because it ended at a live call. */
  skipped: number;
  /** Calls whose entry would run again: an error its branch died on, a cancelled or invalidated entry, an intent with no outcome. */
  reruns: number;
  /** Journal effects no call consumed although the body ran to its end or to a park: never re-executed. */
  orphaned: number;
  /** Resolutions that fail their pinned schema (skipped; the next valid one wins). */
  invalidResolutions: number;
  /** How the pass ended: what a resume would do first. */
  outcome: 'succeeded' | 'failed' | 'parked' | 'live_call';
  /** The registered definition differs from the one the run pinned. */
  drift: boolean;
  liveCall: PreviewCounts['liveCall'];
  /** One item per call or entry counted above, in replay order; then the skipped or orphaned effects. */
  items: PreviewItem[];
  output: Json | null;
  error: RunError | null;
  waitingOn: Waiting[];
}

const silent = pino({ enabled: false });

/**
 * Replays `workflow` over `entries` for `run` in strict mode. `invalidate` previews the effect of
 * unpinning those entries. Pure apart from the workflow body itself.
 */
export async function replayHistory(params: {
  run: Run;
  workflow: Workflow;
  entries: readonly JournalEntry[];
  registry: Registry;
  invalidate?: readonly number[];
  logger?: Logger;
  /** Remote tools' declarations (docs/workers.md); absent: a name no in-process tool has is unknown. */
  remote?: RemoteCalls | null;
  /** Told of every call as it is matched (the replay check, runtime/journal-replay.ts). */
  observer?: CallObserver | null;
  /** Wraps the ctx the body gets (the replay check watches when calls settle). */
  wrapContext?: (ctx: WorkflowContext) => WorkflowContext;
}): Promise<ReplayPreview> {
  const { run, workflow, registry } = params;
  let entries = params.entries;
  if (params.invalidate?.length) {
    const extra = invalidationEntries(JournalIndex.build(run.id, entries), entries, params.invalidate);
    const createdAt = new Date(0);
    entries = [...entries, ...extra.map((e, i): JournalEntry => ({ ...e, runId: run.id, seq: entries.length + i, createdAt }))];
  }
  const execution = new Execution({
    run, entries, mode: 'preview', store: null, lease: null, leaseTtlMs: 0, renewEveryMs: 0,
    now: async () => new Date(), logger: params.logger ?? silent, remote: params.remote ?? null, observer: params.observer ?? null,
  });
  const impl = new WorkflowContextImpl(execution, registry, async () => null);
  const ctx = params.wrapContext ? params.wrapContext(impl) : impl;
  const parsed = workflow.input.safeParse(run.input);
  const end = await execution.start(async () => {
    if (!parsed.success) throw new InvalidInputError(`the input of workflow "${workflow.name}"`, zodViolations(parsed.error));
    return workflow.body(ctx, parsed.data as never);
  });
  const unconsumed = execution.cursor.unconsumed();
  const left = unconsumed.length;
  const reachedEnd = end.kind !== 'stopped';
  const items: PreviewItem[] = [...execution.counts.items, ...unconsumed.map((r): PreviewItem => ({
    outcome: reachedEnd ? 'ORPHANED' : 'SKIPPED', seq: latestAttempt(r).head.seq, scope: r.identity.scope, kind: r.kind, name: r.name,
    detail: reachedEnd ? 'no call consumed it; never re-executed' : 'not reached: the preview stopped at a live call',
  }))];
  let output: Json | null = null;
  let error: RunError | null = null;
  if (end.kind === 'returned') output = toJson(end.value, 'workflow output');
  if (end.kind === 'threw') error = errorRecord(end.error);
  return {
    hits: execution.counts.hits,
    misses: execution.counts.misses,
    reruns: execution.counts.reruns,
    invalidResolutions: execution.counts.invalidResolutions,
    skipped: reachedEnd ? 0 : left,
    orphaned: reachedEnd ? left : 0,
    outcome: end.kind === 'returned' ? 'succeeded' : end.kind === 'threw' ? 'failed' : end.kind === 'blocked' ? 'parked' : 'live_call',
    drift: run.workflowDigest !== workflow.digest,
    liveCall: execution.counts.liveCall,
    items,
    output,
    error,
    waitingOn: end.kind === 'blocked' ? end.parked.map(waitingOf) : [],
  };
}
