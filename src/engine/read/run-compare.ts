// read/: CompareRuns, two runs of one workflow effect by effect (docs/forks.md "Comparing runs").
// Must not write: it reads two runs and their journals; how effects are paired is decided here alone.
import { FORK_LABELS } from '../../journal/fork-labels.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { RunsNotComparableError } from '../errors.js';
import { isEffectHead } from '../replay/replay.js';
import { canonicalJson } from '../replay/content-key.js';
import { roundUsd } from './spend.js';

/*
 * Effects are paired by call site: scope, kind, name and position (the how-many-th effect of that
 * kind and name in that scope), not by content key, so a model call answered by another model, or a
 * tool called with other arguments, still meets its counterpart. A fork and its source share the
 * kept entries at the same seqs; those are marked `kept`.
 */

export type EffectDifference = 'SAME' | 'CHANGED' | 'ONLY_A' | 'ONLY_B';

export interface ComparedEffect {
  seq: number;
  /** ok, error, cancelled, resolved; running or suspended while open. */
  status: string;
  output: Json | null;
  /** The model that answered a model call; '' otherwise. */
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number | null;
  durationMs: number;
}

export interface EffectComparison {
  scope: string;
  kind: string;
  name: string;
  position: number;
  a: ComparedEffect | null;
  b: ComparedEffect | null;
  difference: EffectDifference;
  kept: boolean;
}

export interface RunTotals {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
  effects: number;
}

export interface RunComparison {
  a: Run;
  b: Run;
  /** The fork point when one run is a fork of the other. */
  forkSeq: number | null;
  effects: EffectComparison[];
  totalsA: RunTotals;
  totalsB: RunTotals;
}

/** CompareRuns: both runs (RunNotFoundError for either), refused with RunsNotComparableError when their workflows differ. */
export async function runCompare(store: JournalStore, params: { namespace: string; runIdA: string; runIdB: string }): Promise<RunComparison> {
  const [a, b] = await Promise.all([
    store.runGet({ runId: params.runIdA, namespace: params.namespace }), store.runGet({ runId: params.runIdB, namespace: params.namespace }),
  ]);
  if (a.workflowName !== b.workflowName) {
    throw new RunsNotComparableError(a.id, b.id, `run b is a run of workflow "${b.workflowName}", run a of "${a.workflowName}": compare runs of one workflow`);
  }
  const [entriesA, entriesB] = await Promise.all([
    store.journalList({ runId: a.id, namespace: params.namespace }), store.journalList({ runId: b.id, namespace: params.namespace }),
  ]);
  const forkSeq = forkPointBetween(a, b);
  const sideA = effectsOf(entriesA);
  const sideB = effectsOf(entriesB);
  const effects: EffectComparison[] = [];
  for (const [site, ea] of sideA) effects.push(compared(ea.site, ea.effect, sideB.get(site)?.effect ?? null, forkSeq));
  for (const [site, eb] of sideB) if (!sideA.has(site)) effects.push(compared(eb.site, null, eb.effect, forkSeq));
  return { a, b, forkSeq, effects, totalsA: totals(a, sideA), totalsB: totals(b, sideB) };
}

/** The fork point when `b` was forked from `a` or `a` from `b`; null otherwise. */
function forkPointBetween(a: Run, b: Run): number | null {
  if (b.labels[FORK_LABELS.source] === a.id) return Number(b.labels[FORK_LABELS.seq]);
  if (a.labels[FORK_LABELS.source] === b.id) return Number(a.labels[FORK_LABELS.seq]);
  return null;
}

interface Site { scope: string; kind: string; name: string; position: number }

/** A run's effects by call site, in journal order of their first entries (Map keeps insertion order). */
function effectsOf(entries: readonly JournalEntry[]): Map<string, { site: Site; effect: ComparedEffect }> {
  const out = new Map<string, { site: Site; effect: ComparedEffect }>();
  const positions = new Map<string, number>();
  const byHead = new Map<number, { site: Site; effect: ComparedEffect; head: JournalEntry }>();
  const byIdentity = new Map<string, Site>();
  for (const e of entries) {
    if (e.kind === 'status') continue;
    if (isEffectHead(e)) {
      // A later attempt of the same effect (same identity) replaces the earlier one at its site.
      const identity = `${e.scope}\u0000${e.kind}\u0000${e.contentKey}\u0000${e.occurrence}`;
      const site = byIdentity.get(identity) ?? nextSite(positions, e);
      byIdentity.set(identity, site);
      const record = { site, effect: ended(e, e), head: e };
      byHead.set(e.seq, record);
      out.set(siteKey(site), { site, effect: record.effect });
      continue;
    }
    const owner = e.refSeq === null ? undefined : byHead.get(e.refSeq);
    if (!owner || e.status === 'noop' || e.status === 'info') continue;
    // The first resolution wins a wait; a terminal ends an intent.
    if (owner.effect.status === 'resolved') continue;
    owner.effect = ended(owner.head, e);
    out.set(siteKey(owner.site), { site: owner.site, effect: owner.effect });
  }
  return out;
}

function nextSite(positions: Map<string, number>, e: JournalEntry): Site {
  const key = `${e.scope}\u0000${e.kind}\u0000${e.name}`;
  const position = positions.get(key) ?? 0;
  positions.set(key, position + 1);
  return { scope: e.scope, kind: e.kind, name: e.name, position };
}

function siteKey(site: Site): string {
  return `${site.scope}\u0000${site.kind}\u0000${site.name}\u0000${site.position}`;
}

function ended(head: JournalEntry, last: JournalEntry): ComparedEffect {
  const payload = last.payload;
  const record = payload !== null && typeof payload === 'object' && !Array.isArray(payload) ? payload : null;
  const model = head.kind === 'model' && record && typeof record.model === 'string' ? record.model : '';
  return {
    seq: head.seq,
    status: last.status,
    output: last === head && (head.status === 'running' || head.status === 'suspended') ? null : payload,
    model,
    inputTokens: last.usage?.inputTokens ?? 0,
    outputTokens: last.usage?.outputTokens ?? 0,
    costUsd: last.costUsd,
    durationMs: Math.max(0, last.createdAt.getTime() - head.createdAt.getTime()),
  };
}

function compared(site: Site, a: ComparedEffect | null, b: ComparedEffect | null, forkSeq: number | null): EffectComparison {
  const difference: EffectDifference = !a ? 'ONLY_B' : !b ? 'ONLY_A' : same(a, b) ? 'SAME' : 'CHANGED';
  const kept = forkSeq !== null && a !== null && b !== null && a.seq === b.seq && a.seq < forkSeq;
  return { ...site, a, b, difference, kept };
}

function same(a: ComparedEffect, b: ComparedEffect): boolean {
  return a.status === b.status && a.model === b.model && canonicalJson(a.output) === canonicalJson(b.output);
}

function totals(run: Run, effects: Map<string, { effect: ComparedEffect }>): RunTotals {
  let costUsd = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for (const { effect } of effects.values()) {
    costUsd += effect.costUsd ?? 0;
    inputTokens += effect.inputTokens;
    outputTokens += effect.outputTokens;
  }
  return { costUsd: roundUsd(costUsd), inputTokens, outputTokens, durationMs: Math.max(0, run.updatedAt.getTime() - run.createdAt.getTime()), effects: effects.size };
}
