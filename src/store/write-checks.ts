import { PayloadTooLargeError, UnstorableValueError, type UnstorableProblem } from '../journal/errors.js';
import { newEntry, type DriftPayload, type NewJournalEntry, type StatusPayload } from '../journal/journal-entry.js';
import { MAX_STORED_JSON_DEPTH, runTimeoutProblem, type Limits } from '../journal/limits.js';
import type { Json, RunError, RunStatus } from '../journal/run.js';
import type { RunCreateParams } from './store.js';

/*
 * Checks every store runs before it writes, so a refused request writes nothing (DESIGN "Limits").
 * Shared by the memory and Postgres stores so the conformance suite sees the same answers.
 */

/** Returns the sizes of the prefix entries' payloads (assertEntriesFit), empty without a prefix. */
export function assertRunCreateFits(params: RunCreateParams, limits: Limits): number[] {
  assertJsonStorable('input', params.input, limits.payloadBytes);
  assertJsonStorable('labels', params.labels ?? null, limits.payloadBytes);
  if (params.timeoutMs !== undefined && params.timeoutMs !== null) {
    const problem = runTimeoutProblem(params.timeoutMs);
    if (problem) throw new RangeError(`timeoutMs ${problem}, got ${params.timeoutMs}`);
  }
  if (params.journal?.length) {
    if (!params.leaseFor || params.leaseFor.recordRunning) throw new TypeError('runCreate with `journal` needs leaseFor without recordRunning');
    const sizes = assertEntriesFit(params.journal, limits);
    if (params.journal.length > limits.journalEntries) throw new RangeError(`journal holds ${params.journal.length} entries, over the limit of ${limits.journalEntries}`);
    return sizes;
  }
  return [];
}

/**
 * The deadline of each entry of a run's first entries (RunCreateParams.journal): a suspension's,
 * unless an entry among them resolves or cancels it (the sweeper must not time out a closed wait).
 */
export function prefixDeadlines(entries: readonly NewJournalEntry[]): (Date | null)[] {
  const closed = new Set<number>();
  for (const e of entries) if (e.refSeq !== null && (e.status === 'resolved' || e.status === 'cancelled')) closed.add(e.refSeq);
  return entries.map((e, seq) => (closed.has(seq) ? null : suspensionDeadline(e)));
}

/**
 * Refuses, before anything is written, a JSON value over the payload limit (PayloadTooLargeError,
 * measured as JSON text), or one the journal cannot store (UnstorableValueError naming where): a NUL
 * character or an unpaired surrogate in a string or key (PostgreSQL's jsonb refuses both), or
 * nesting past MAX_STORED_JSON_DEPTH. The memory store runs the same check, so both answer alike.
 */
export function assertJsonStorable(field: string, value: Json | null | undefined, limitBytes: number, maxDepth = MAX_STORED_JSON_DEPTH): number {
  if (value === undefined || value === null) return 0;
  const text = JSON.stringify(value);
  const size = Buffer.byteLength(text, 'utf8');
  if (size > limitBytes) throw new PayloadTooLargeError(field, size, limitBytes);
  // JSON.stringify escapes U+0000 as \u0000 and a lone surrogate as \udXXX (paired ones it writes
  // as they are), so the walk that names the place runs only when the text shows a problem.
  const chars = text.includes('\\u0000') || /\\ud[89a-f]/i.test(text);
  if (!chars && jsonTextDepth(text) <= maxDepth) return size;
  const found = unstorable(value, field, 0, maxDepth, chars);
  if (found) throw new UnstorableValueError(found.at, found.problem);
  return size;
}

/** Refuses a NUL character or an unpaired surrogate in a string bound for a text column (a signal name or id). */
export function assertStorableText(field: string, value: string): void {
  const problem = textProblem(value);
  if (problem) throw new UnstorableValueError(field, problem);
}

// In a `u` regex a string is read as code points: a paired surrogate is one, a lone one stays Cs.
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `text` cannot be stored in PostgreSQL text or jsonb, or null. */
export function textProblem(text: string): UnstorableProblem | null {
  if (text.includes('\u0000')) return 'nul';
  if (LONE_SURROGATE.test(text)) return 'surrogate';
  return null;
}

/** The deepest nesting of containers in JSON text (`[[1]]` is 2), skipping brackets inside strings. */
function jsonTextDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) max = Math.max(max, ++depth);
    else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

function unstorable(value: Json, at: string, depth: number, maxDepth: number, chars: boolean): { at: string; problem: UnstorableProblem } | null {
  if (typeof value === 'string') {
    const problem = chars ? textProblem(value) : null;
    return problem ? { at, problem } : null;
  }
  if (value === null || typeof value !== 'object') return null;
  if (depth >= maxDepth) return { at, problem: 'depth' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorable(value[i]!, `${at}[${i}]`, depth + 1, maxDepth, chars);
      if (found) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    const keyProblem = chars ? textProblem(key) : null;
    if (keyProblem) return { at: `${at} (a key)`, problem: keyProblem };
    const found = unstorable(item, `${at}.${key}`, depth + 1, maxDepth, chars);
    if (found) return found;
  }
  return null;
}

/**
 * Each entry's payload and error, named by position: `entries[2].payload`. Returns each payload's
 * size in bytes of JSON text (0 for none), which decides where it is stored (payload-refs.ts).
 */
export function assertEntriesFit(entries: readonly NewJournalEntry[], limits: Limits, prefix = 'entries'): number[] {
  return entries.map((e, i) => {
    const at = entries.length === 1 && prefix !== 'entries' ? prefix : `${prefix}[${i}]`;
    const size = assertJsonStorable(`${at}.payload`, e.payload, limits.payloadBytes);
    assertJsonStorable(`${at}.error`, e.error as Json | null, limits.payloadBytes);
    return size;
  });
}

export function assertStatusFits(params: { output?: Json; error?: RunError }, limits: Limits): void {
  assertJsonStorable('output', params.output ?? null, limits.payloadBytes);
  assertJsonStorable('error', (params.error ?? null) as Json | null, limits.payloadBytes);
}

/** The checks of runStatusForce before anything is read or written (the same in every store). */
export function assertForcedStatusFits(params: { status: string; output?: Json; error?: RunError }, limits: Limits): void {
  if (params.status === 'RUNNING') {
    throw new TypeError('runStatusForce cannot set RUNNING: only a lease holder runs a run (runLeaseAcquire)');
  }
  assertStatusFits(params, limits);
}

/**
 * The deadline of a suspension entry (payload.deadlineAt, an ISO timestamp), or null when it has
 * none. A deadline that does not parse is a bug in the writer: refusing it beats a timer that
 * silently never fires.
 */
export function suspensionDeadline(entry: Pick<NewJournalEntry, 'status' | 'payload'>): Date | null {
  if (entry.status !== 'suspended') return null;
  const p = entry.payload;
  if (p === null || typeof p !== 'object' || Array.isArray(p)) return null;
  const raw = p.deadlineAt;
  if (raw === undefined || raw === null) return null;
  const at = typeof raw === 'string' ? new Date(raw) : null;
  if (at === null || Number.isNaN(at.getTime())) {
    throw new TypeError(`suspension payload.deadlineAt must be an ISO timestamp string, got ${JSON.stringify(raw)}`);
  }
  return at;
}

/** The `status` entry that records a status change: kind `status`, name = the status, payload = the event. */
/** The `status` entry named `drift` that runDigestSet journals (DriftPayload). */
export function driftEntry(drift: DriftPayload['drift']): NewJournalEntry {
  return newEntry({ kind: 'status', name: 'drift', status: 'info', payload: { drift } as unknown as Json });
}

export function statusEntry(status: RunStatus, output?: Json | null, error?: RunError | null): NewJournalEntry {
  const payload: StatusPayload = { status };
  if (output !== undefined && output !== null) payload.output = output;
  if (error !== undefined && error !== null) payload.error = error;
  return newEntry({ kind: 'status', name: status, status: 'info', payload: payload as unknown as Json });
}
