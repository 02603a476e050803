// runtime/: replayJournal, the replay check of `waymark replay` as a library call (docs/replay.md).
// Must not write, read a store or make a live call: it is the resume preview's pass plus verdicts.
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, RunStatus } from '../../journal/run.js';
import { canonicalJson } from '../replay/content-key.js';
import { parseJournalExport } from '../replay/journal-export.js';
import { Registry } from '../registry.js';
import { isTool, type Tool } from '../author/tool.js';
import { isWorkflow, type Workflow } from '../author/workflow.js';
import { CallOrderWatch, type ReplayDivergence } from './call-order.js';
import { replayHistory, type ReplayPreview } from './resume-preview.js';

/*
 * Temporal's replayer, for Waymark: a recorded journal (an export, docs/replay.md "The file") is
 * replayed against the workflow code as it is now, with no live call, no write and no database,
 * and the result is a list of divergences (docs/replay.md "Verdicts"). It is the resume preview's
 * pass (resume-preview.ts replayHistory over replay/replayDecide), with three things added: the
 * order of sequential calls is watched (call-order.ts), a run that SUCCEEDED must not fail on
 * replay, and `strict` also refuses what a resume accepts (a new call, an orphaned effect).
 */

export interface ReplayCheckOptions {
  /** Also fail on a call the journal has no entry for (it would run live) and on orphaned effects. */
  strict?: boolean;
}

export interface ReplayCheckReport {
  runId: string;
  workflow: { name: string; version: string; digest: string };
  /** The status the journal's last status entry records (the run's status when it has none). */
  recordedStatus: RunStatus;
  /** True when nothing diverged: the file replays against the code. */
  ok: boolean;
  divergences: ReplayDivergence[];
  /** How the pass ended (the resume preview's outcome); `not_replayed` when the workflow is missing. */
  outcome: ReplayPreview['outcome'] | 'not_replayed';
  hits: number;
  misses: number;
  reruns: number;
  orphaned: number;
  skipped: number;
  /** The definition differs from the one the run pinned (expected after a code change; not a divergence). */
  drift: boolean;
  /** The call that would run live (a new call, or a rerun of the call the recorded run ended on). */
  liveCall: ReplayPreview['liveCall'];
  /** What a person should know that is not a divergence, one sentence each. */
  notes: string[];
}

/** The workflows to check against: a Registry, or workflows and tools (a module's exports, a list). */
export type ReplayWorkflows = Registry | Iterable<Workflow | Tool> | Record<string, unknown>;

function registryOf(workflows: ReplayWorkflows): Registry {
  if (workflows instanceof Registry) return workflows;
  const items = Symbol.iterator in Object(workflows) ? [...(workflows as Iterable<unknown>)] : Object.values(workflows);
  const registry = new Registry();
  for (const item of items) if (isWorkflow(item) || isTool(item)) registry.register(item);
  return registry;
}

/** The last status the journal records, as written when the run's status changed. */
function recordedStatusOf(entries: readonly JournalEntry[], fallback: RunStatus): { status: RunStatus; entry: JournalEntry | null; output: Json | null } {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    const p = e.payload;
    if (e.kind === 'status' && p !== null && typeof p === 'object' && !Array.isArray(p) && typeof p.status === 'string') {
      return { status: p.status as RunStatus, entry: e, output: (p.output as Json | undefined) ?? null };
    }
  }
  return { status: fallback, entry: null, output: null };
}

/**
 * Replays one exported journal (its text, or the parsed JSON) against `workflows`. Throws
 * JournalExportError for a file that is not an export and JournalCorruptError for entries that do
 * not fit together; every other finding is in the report.
 */
export async function replayJournal(workflows: ReplayWorkflows, exported: unknown, options: ReplayCheckOptions = {}): Promise<ReplayCheckReport> {
  const { run, entries } = parseJournalExport(exported);
  const registry = registryOf(workflows);
  const recorded = recordedStatusOf(entries, run.status);
  const report: ReplayCheckReport = {
    runId: run.id, workflow: { name: run.workflowName, version: run.workflowVersion, digest: run.workflowDigest },
    recordedStatus: recorded.status, ok: false, divergences: [], outcome: 'not_replayed',
    hits: 0, misses: 0, reruns: 0, orphaned: 0, skipped: 0, drift: false, liveCall: null, notes: [],
  };
  if (!registry.has(run.workflowName)) {
    report.divergences.push({
      verdict: 'workflow_missing', seq: null, scope: '', kind: 'workflow', name: run.workflowName,
      message: `the code has no workflow "${run.workflowName}"; its runs cannot resume`,
    });
    return report;
  }
  const workflow = registry.workflow(run.workflowName);
  const watch = new CallOrderWatch();
  const preview = await replayHistory({ run, workflow, entries, registry, observer: watch, wrapContext: (ctx) => watch.wrap(ctx) });
  Object.assign(report, {
    outcome: preview.outcome, hits: preview.hits, misses: preview.misses, reruns: preview.reruns, orphaned: preview.orphaned,
    skipped: preview.skipped, drift: preview.drift, liveCall: preview.liveCall,
  });
  const divergences = [...watch.divergences];
  if (recorded.status === 'SUCCEEDED' && (preview.outcome === 'failed' || preview.outcome === 'parked') && divergences.length === 0) {
    const at = recorded.entry;
    divergences.push({
      verdict: 'outcome_changed', seq: at?.seq ?? null, scope: '', kind: 'status', name: at?.name ?? 'SUCCEEDED',
      message: preview.outcome === 'failed'
        ? `the recorded run SUCCEEDED, the code now fails on the same answers: ${preview.error?.name}: ${preview.error?.message}`
        : 'the recorded run SUCCEEDED, the code now waits on something the journal never resolved',
    });
  }
  if (preview.liveCall) {
    const c = preview.liveCall;
    if (c.why === 'miss') {
      const rest = preview.skipped > 0 ? `; ${preview.skipped} recorded effect(s) after it were not checked (they may depend on its answer)` : '';
      report.notes.push(`new call ${c.kind} "${c.name}"${c.scope ? ` in scope ${c.scope}` : ''} would run live here${rest}`);
      if (options.strict) divergences.push({ verdict: 'new_call', seq: null, scope: c.scope, kind: c.kind, name: c.name, message: `${c.kind} "${c.name}" has no journal entry: it would run live (--strict)` });
    } else {
      report.notes.push(`a resume would run ${c.kind} "${c.name}" again (${c.why}), as the recorded run left it`);
    }
  }
  for (const item of preview.items) {
    if (item.outcome !== 'ORPHANED') continue;
    report.notes.push(`${item.kind} "${item.name}" (seq ${item.seq}) is orphaned: no call consumed it, a resume never re-executes it`);
    if (options.strict) divergences.push({ verdict: 'orphaned', seq: item.seq, scope: item.scope, kind: item.kind, name: item.name, message: 'no call of the code consumed it (--strict)' });
  }
  if (recorded.status === 'SUCCEEDED' && preview.outcome === 'succeeded' && canonicalJson(preview.output) !== canonicalJson(recorded.output ?? run.output)) {
    report.notes.push('the code now returns another output from the same answers (the recorded run keeps its own)');
  }
  if (preview.drift) report.notes.push(`the definition differs from the one the run pinned (digest ${run.workflowDigest.slice(0, 12)} then, ${workflow.digest.slice(0, 12)} now)${workflow.drift === 'strict' ? '; its drift policy is strict, so a resume would be refused' : ''}`);
  report.divergences = divergences;
  report.ok = divergences.length === 0;
  return report;
}
