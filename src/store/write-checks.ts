import { newEntry, type NewJournalEntry, type StatusPayload } from '../journal/journal-entry.js';
import { assertPayloadSize, type Limits } from '../journal/limits.js';
import type { Json, RunError, RunStatus } from '../journal/run.js';
import type { RunCreateParams } from './store.js';

/*
 * Checks every store runs before it writes, so a refused request writes nothing (DESIGN "Limits").
 * Shared by the memory and Postgres stores so the conformance suite sees the same answers.
 */

export function assertRunCreateFits(params: RunCreateParams, limits: Limits): void {
  assertPayloadSize('input', params.input, limits.payloadBytes);
  assertPayloadSize('labels', params.labels ?? null, limits.payloadBytes);
}

/** Each entry's payload and error, named by position: `entries[2].payload`. */
export function assertEntriesFit(entries: readonly NewJournalEntry[], limits: Limits, prefix = 'entries'): void {
  entries.forEach((e, i) => {
    const at = entries.length === 1 && prefix !== 'entries' ? prefix : `${prefix}[${i}]`;
    assertPayloadSize(`${at}.payload`, e.payload, limits.payloadBytes);
    assertPayloadSize(`${at}.error`, e.error as Json | null, limits.payloadBytes);
  });
}

export function assertStatusFits(params: { output?: Json; error?: RunError }, limits: Limits): void {
  assertPayloadSize('output', params.output ?? null, limits.payloadBytes);
  assertPayloadSize('error', (params.error ?? null) as Json | null, limits.payloadBytes);
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
