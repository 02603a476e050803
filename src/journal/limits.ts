import { DEFAULT_DEFINITION_LIMITS, type DefinitionLimits } from './definition-limits.js';
import { PayloadTooLargeError } from './errors.js';
import type { Json } from './run.js';

/** Limits from DESIGN.md "Limits"; each is a setting. A refused request writes nothing. */
export interface Limits {
  /** Largest gRPC request message, in bytes. */
  requestBytes: number;
  /** Largest JSON payload (input, output, signal, tool result), in bytes of its JSON text. */
  payloadBytes: number;
  /**
   * A journal entry's result (an `ok` or `info` entry's payload) whose JSON text is over this many
   * bytes is stored once per run in a table of its own and referenced from the entry, so paging
   * and listing read small rows (docs/journal.md "Large payloads"). Not a limit: nothing is refused.
   */
  payloadInlineBytes: number;
  /** Most journal entries one run may hold. */
  journalEntries: number;
  /** Most bytes of journaled payloads (JSON text) one run may hold, counted as its executions append them. */
  journalBytes: number;
  /** Most concurrent event streams one replica serves. */
  streamsPerReplica: number;
  /** What a tenant may define (flows, schemas, tool declarations): definition-limits.ts. */
  definitions: DefinitionLimits;
}

export const DEFAULT_LIMITS: Limits = {
  requestBytes: 4 * 1024 * 1024,
  payloadBytes: 1024 * 1024,
  payloadInlineBytes: 64 * 1024,
  journalEntries: 100_000,
  journalBytes: 64 * 1024 * 1024,
  streamsPerReplica: 1000,
  definitions: DEFAULT_DEFINITION_LIMITS,
};

/**
 * The share of a journal limit (entries or bytes) past which a run is reported near it: GetRun's
 * `journal_near_limit`, the metric waymark_journal_near_limit_total (docs/journal.md "Bounded
 * journals"). Temporal warns at a fifth of its cap; 80 % leaves room to continue as new.
 */
export const JOURNAL_WARN_FRACTION = 0.8;

/** How full a run's journal is, against both limits; `near` at JOURNAL_WARN_FRACTION of either. */
export function journalUsage(run: { nextSeq: number; journalBytes: number }, limits: Pick<Limits, 'journalEntries' | 'journalBytes'>): {
  entriesFraction: number; bytesFraction: number; near: boolean;
} {
  const entriesFraction = run.nextSeq / limits.journalEntries;
  const bytesFraction = run.journalBytes / limits.journalBytes;
  return { entriesFraction, bytesFraction, near: Math.max(entriesFraction, bytesFraction) >= JOURNAL_WARN_FRACTION };
}

/** Throws PayloadTooLargeError naming `field` when the JSON text of `value` passes the limit. */
export function assertPayloadSize(field: string, value: Json | null | undefined, limitBytes: number): void {
  if (value === undefined || value === null) return;
  const size = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (size > limitBytes) throw new PayloadTooLargeError(field, size, limitBytes);
}

/**
 * Nesting of a JSON value a request may carry, in JSON levels (`[[1]]` is 2). One limit for both
 * protocols and every client: a google.protobuf.Value nests two protobuf messages per JSON level
 * (Value, then Struct or ListValue), and the binary decoders of protobuf-es and of Python's upb stop
 * at 100 nested messages, so a value must stay well under 50 levels to be read back inside a
 * response (GetJournalResponse > JournalEntry > its payload's envelope > the value). 32 leaves room
 * for those wrappers; test/server/json-depth.test.ts reads values at the limit back over gRPC binary.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Nesting the stores accept in anything they write: the request limit plus the envelopes the
 * engine wraps around a value (a resolution's `{source, value}`, a status entry's `{output}`), so a
 * value a request was allowed to send is always stored, and nothing deeper ever is.
 */
export const MAX_STORED_JSON_DEPTH = MAX_JSON_DEPTH + 4;

/**
 * The longest run timeout (StartRun `timeout`, defineWorkflow `timeout`): ten years, in
 * milliseconds. Longer is refused as a mistake (a unit slip, a sentinel like "forever"): a run that
 * should never time out has no timeout. docs/workflows.md "Timeouts".
 */
export const MAX_RUN_TIMEOUT_MS = 3650 * 86_400_000;

/** Why `timeoutMs` is not a run timeout (a whole number of milliseconds, 1 to MAX_RUN_TIMEOUT_MS), or null when it is. */
export function runTimeoutProblem(timeoutMs: number): string | null {
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1) return 'must be a positive whole number of milliseconds (at least 1 ms)';
  if (timeoutMs > MAX_RUN_TIMEOUT_MS) return `must be at most ${MAX_RUN_TIMEOUT_MS / 86_400_000} days; omit it for a run with no timeout`;
  return null;
}
