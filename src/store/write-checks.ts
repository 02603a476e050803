import { PayloadTooLargeError, UnstorableValueError } from '../journal/errors.js';
import { newEntry, type NewJournalEntry, type StatusPayload } from '../journal/journal-entry.js';
import type { Limits } from '../journal/limits.js';
import type { Json, RunError, RunStatus } from '../journal/run.js';
import type { RunCreateParams } from './store.js';

/*
 * Checks every store runs before it writes, so a refused request writes nothing (DESIGN "Limits").
 * Shared by the memory and Postgres stores so the conformance suite sees the same answers.
 */

export function assertRunCreateFits(params: RunCreateParams, limits: Limits): void {
  assertJsonStorable('input', params.input, limits.payloadBytes);
  assertJsonStorable('labels', params.labels ?? null, limits.payloadBytes);
}

/**
 * Refuses, before anything is written, a JSON value over the payload limit (PayloadTooLargeError,
 * measured as JSON text) or holding a NUL character (UnstorableValueError naming where: PostgreSQL
 * jsonb and text cannot store U+0000, so the memory store refuses it too and both answer alike).
 */
export function assertJsonStorable(field: string, value: Json | null | undefined, limitBytes: number): void {
  if (value === undefined || value === null) return;
  const text = JSON.stringify(value);
  const size = Buffer.byteLength(text, 'utf8');
  if (size > limitBytes) throw new PayloadTooLargeError(field, size, limitBytes);
  // JSON.stringify always escapes U+0000 as \u0000, so the walk runs only when that text is there.
  if (text.includes('\\u0000')) {
    const at = nulPath(value, field);
    if (at !== null) throw new UnstorableValueError(at);
  }
}

/** Refuses a NUL character in a string bound for a text column (a signal name or id). */
export function assertStorableText(field: string, value: string): void {
  if (value.includes('\u0000')) throw new UnstorableValueError(field);
}

function nulPath(value: Json, at: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? at : null;
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulPath(value[i]!, `${at}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key.includes('\u0000')) return `${at} (a key)`;
    const found = nulPath(item, `${at}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

/** Each entry's payload and error, named by position: `entries[2].payload`. */
export function assertEntriesFit(entries: readonly NewJournalEntry[], limits: Limits, prefix = 'entries'): void {
  entries.forEach((e, i) => {
    const at = entries.length === 1 && prefix !== 'entries' ? prefix : `${prefix}[${i}]`;
    assertJsonStorable(`${at}.payload`, e.payload, limits.payloadBytes);
    assertJsonStorable(`${at}.error`, e.error as Json | null, limits.payloadBytes);
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
export function statusEntry(status: RunStatus, output?: Json | null, error?: RunError | null): NewJournalEntry {
  const payload: StatusPayload = { status };
  if (output !== undefined && output !== null) payload.output = output;
  if (error !== undefined && error !== null) payload.error = error;
  return newEntry({ kind: 'status', name: status, status: 'info', payload: payload as unknown as Json });
}
