// replay/: how an error is recorded in the journal and rebuilt from that record on every replay.
// Pure: no store or clock; what it rebuilds must depend on the record only, never on the first process.
import { WaymarkError } from '../../journal/errors.js';
import type { Json, RunError } from '../../journal/run.js';
import { toJson } from './content-key.js';
import { EffectFailedError, RetriesExhaustedError, ToolApprovalDeniedError } from '../errors.js';

/*
 * How errors are journaled and re-thrown (docs/journal.md "Errors"). A failed effect is recorded
 * as {name, message, reason?, details?}; the code then receives the error rebuilt from that record,
 * on the first run as on every replay, so `catch` blocks take the same path both times.
 */

const OMIT = new Set(['message', 'stack', 'name', 'cause', 'reason', 'retryable', 'nonRetryable']);

/** The record of any thrown value. */
export function errorRecord(err: unknown): RunError {
  if (err instanceof RetriesExhaustedError) {
    // The journal says by itself that the attempts ran out, and with what.
    return {
      name: 'RetriesExhaustedError', message: err.message, reason: 'retries_exhausted',
      details: { effectKind: err.effectKind, effectName: err.effectName, attempts: err.attempts, lastError: err.lastError as unknown as Json },
    };
  }
  if (err instanceof EffectFailedError) {
    const record: RunError = { name: err.errorName, message: err.errorMessage };
    if (err.details !== null) record.details = err.details;
    return record;
  }
  if (err instanceof Error) {
    const record: RunError = { name: err.name || 'Error', message: err.message };
    if (err instanceof WaymarkError) record.reason = err.reason.toLowerCase();
    else if (typeof (err as unknown as { reason?: unknown }).reason === 'string') record.reason = (err as unknown as { reason: string }).reason;
    const details = ownFields(err);
    if (details !== null) record.details = details;
    return record;
  }
  return { name: 'Error', message: typeof err === 'string' ? err : safeText(err) };
}

/** The error a workflow sees for a recorded failure of the effect `kind` `name`. */
export function errorFromRecord(record: RunError, effect: { kind: string; name: string }): Error {
  if (record.name === 'RetriesExhaustedError' && record.reason === 'retries_exhausted') {
    const d = (record.details ?? {}) as { effectKind?: unknown; effectName?: unknown; attempts?: unknown; lastError?: RunError };
    const last = d.lastError && typeof d.lastError === 'object' ? d.lastError : { name: 'Error', message: record.message };
    return new RetriesExhaustedError(
      typeof d.effectKind === 'string' ? d.effectKind : effect.kind,
      typeof d.effectName === 'string' ? d.effectName : effect.name,
      typeof d.attempts === 'number' ? d.attempts : 0,
      last,
    );
  }
  if (record.name === 'ToolApprovalDeniedError') {
    const d = (record.details ?? {}) as Record<string, Json>;
    return new ToolApprovalDeniedError(
      typeof d.toolName === 'string' ? d.toolName : effect.name,
      typeof d.deniedBy === 'string' ? d.deniedBy : 'unknown',
      typeof d.comment === 'string' ? d.comment : null,
    );
  }
  return new EffectFailedError(effect.kind, effect.name, record.name, record.message, record.details ?? null);
}

function ownFields(err: Error): Json | null {
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(err)) if (!OMIT.has(key)) fields[key] = (err as unknown as Record<string, unknown>)[key];
  if (Object.keys(fields).length === 0) return null;
  try {
    return toJson(fields, 'error details');
  } catch {
    return null;
  }
}

function safeText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
