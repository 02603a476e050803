import { EntryStatus, type JournalEntry } from '@waymark-dev/client/browser';
import { json, ms } from './format.js';

/*
 * A journal folded into what the run page draws (docs/journal.md "Entries"): an effect is the
 * entries of one identity (scope, content key, occurrence); each attempt is a span from its
 * intent (or its one write) to its outcome; a wait (approval, signal, sleep, child, a retry's
 * backoff) is a span from `suspended` to the resolution that closed it, saying who or what
 * resolved it. Status entries are the run's own, drawn as markers. Pure: tested by the pages.
 */

export type SpanKind = 'attempt' | 'wait';

export interface Span {
  kind: SpanKind;
  seq: number;
  start: number;
  /** Undefined while open (an intent without outcome, an open wait). */
  end: number | undefined;
  status: 'ok' | 'error' | 'running' | 'waiting' | 'resolved' | 'cancelled' | 'info';
  attempt: number;
  /** For a wait: who or what resolved it ("approved by alice", "timer", "worker"). */
  resolvedBy: string | undefined;
  head: JournalEntry;
  outcome: JournalEntry | undefined;
}

export interface Effect {
  id: string;
  scope: string;
  kind: string;
  name: string;
  spans: Span[];
  /** First seq of the effect: the order of the compact view. */
  seq: number;
}

export interface Folded {
  effects: Effect[];
  /** The run's status entries: RUNNING, SUSPENDED, SUCCEEDED… */
  statuses: JournalEntry[];
  /** Scopes in order of first appearance: the timeline's lanes. */
  scopes: string[];
  start: number;
  end: number;
}

const STATUS: Partial<Record<EntryStatus, Span['status']>> = {
  [EntryStatus.OK]: 'ok', [EntryStatus.ERROR]: 'error', [EntryStatus.RUNNING]: 'running', [EntryStatus.SUSPENDED]: 'waiting',
  [EntryStatus.RESOLVED]: 'resolved', [EntryStatus.CANCELLED]: 'cancelled', [EntryStatus.INFO]: 'info', [EntryStatus.NOOP]: 'resolved',
};

/** Kinds whose waits are a retry's backoff timer (docs/workflows.md "Retries and timeouts"). */
const RETRIED = new Set(['step', 'tool', 'model']);

export function fold(entries: readonly JournalEntry[]): Folded {
  const effects = new Map<string, Effect>();
  const spans = new Map<bigint, Span>();
  const statuses: JournalEntry[] = [];
  const scopes: string[] = [];
  let start = Number.POSITIVE_INFINITY;
  let end = 0;
  for (const e of entries) {
    const t = ms(e.createTime) ?? 0;
    start = Math.min(start, t);
    end = Math.max(end, t);
    if (e.kind === 'status') {
      statuses.push(e);
      continue;
    }
    if (e.refSeq !== undefined) {
      const span = spans.get(e.refSeq);
      if (!span) continue;
      if (e.status === EntryStatus.NOOP) continue; // a later resolution that lost: the first one closed the wait
      span.outcome = e;
      span.end = t;
      if (span.kind === 'wait') {
        span.status = e.status === EntryStatus.CANCELLED ? 'cancelled' : 'resolved';
        span.resolvedBy = RETRIED.has(span.head.kind) ? `backoff, then attempt ${span.head.attempt || 2}` : resolver(e);
      } else {
        span.status = STATUS[e.status] ?? 'info';
      }
      continue;
    }
    const id = `${e.scope}\u0000${e.contentKey || `seq:${e.seq}`}\u0000${e.occurrence}`;
    let effect = effects.get(id);
    if (!effect) {
      effect = { id, scope: e.scope, kind: e.kind, name: e.name, spans: [], seq: Number(e.seq) };
      effects.set(id, effect);
      if (!scopes.includes(e.scope)) scopes.push(e.scope);
    }
    const wait = e.status === EntryStatus.SUSPENDED;
    const open = e.status === EntryStatus.RUNNING || wait;
    const span: Span = {
      kind: wait ? 'wait' : 'attempt', seq: Number(e.seq), start: t, end: open ? undefined : t,
      status: STATUS[e.status] ?? 'info', attempt: e.attempt, resolvedBy: undefined, head: e, outcome: undefined,
    };
    effect.spans.push(span);
    spans.set(e.seq, span);
  }
  if (!Number.isFinite(start)) start = end = Date.now();
  return { effects: [...effects.values()], statuses, scopes, start, end };
}

/** Who or what closed a wait, from its resolution's payload ({ source, by, value }). */
export function resolver(e: JournalEntry): string {
  const p = json(e.payload) as { source?: string; by?: string; value?: { approved?: boolean } } | null;
  if (e.status === EntryStatus.CANCELLED) return 'cancelled';
  if (!p || typeof p !== 'object') return 'resolved';
  const verdict = p.value && typeof p.value === 'object' && 'approved' in p.value ? (p.value.approved ? 'approved' : 'denied') : 'resolved';
  if (p.by) return `${verdict} by ${p.by}`;
  if (p.source === 'timeout') return e.kind === 'sleep' ? 'timer fired' : e.kind === 'approval' ? 'timed out' : 'deadline passed';
  if (p.source === 'child') return 'child finished';
  if (p.source === 'signal') return 'signal received';
  if (p.source === 'worker') return 'worker answered';
  return p.source ? `${verdict} (${p.source})` : verdict;
}

/** A scope as people read it: `par:0:1` is branch 2 of the first parallel, nested with ›. */
export function scopeLabel(scope: string): string {
  if (!scope) return '';
  return scope.split('/').map((part) => {
    const m = /^par:(\d+):(\d+)$/.exec(part);
    return m ? `branch ${Number(m[2]) + 1}` : part.startsWith('agent:') ? 'agent' : part;
  }).join(' › ');
}

/** Where a child effect points: the child run's id, from its resolution's dedupe key (`child:<id>`) once it ended. */
export function childRunId(e: Effect): string | undefined {
  if (e.kind !== 'child') return undefined;
  for (const s of e.spans) {
    const key = s.outcome?.dedupeKey ?? '';
    if (key.startsWith('child:')) return key.slice('child:'.length);
  }
  return undefined;
}
