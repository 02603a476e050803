import type { Json, RunError, RunStatus } from './run.js';

/** What a journal entry records. `status` entries are the run's own status changes. */
export const ENTRY_KINDS = [
  'step', 'tool', 'model', 'agent', 'now', 'uuid', 'sleep', 'signal', 'approval', 'child', 'emit', 'status',
] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

/**
 * running    intent: the effect was dispatched (written before it executes)
 * ok|error   terminal outcome of an effect; `refSeq` points at its `running` entry when there was one
 * cancelled  the effect was abandoned; replay runs it again
 * suspended  a wait (approval, signal, sleep, child); closed by a resolution
 * resolved   the winning resolution of a suspension (`refSeq` = the suspension)
 * noop       a later resolution of an already-resolved suspension, kept for the audit trail
 * info       an entry that records without being an effect (status changes, emitted events)
 */
export const ENTRY_STATUSES = ['running', 'ok', 'error', 'cancelled', 'suspended', 'resolved', 'noop', 'info'] as const;
export type EntryStatus = (typeof ENTRY_STATUSES)[number];

export interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

export interface JournalEntry {
  runId: string;
  seq: number;
  scope: string;
  kind: EntryKind;
  name: string;
  contentKey: string;
  occurrence: number;
  status: EntryStatus;
  payload: Json | null;
  error: RunError | null;
  /** The entry this one completes or resolves. */
  refSeq: number | null;
  idempotencyKey: string | null;
  /** Caller-chosen id that deduplicates a resolution (signal_id, request_id). */
  dedupeKey: string | null;
  usage: Usage | null;
  costUsd: number | null;
  /**
   * The attempt of its effect this entry belongs to: 1 for the first, n for the n-th under a retry
   * policy; a backoff timer carries the attempt it leads to. Null on status entries, resolutions,
   * waits, and entries written before attempts were recorded (docs/journal.md "Retries").
   */
  attempt: number | null;
  createdAt: Date;
  /**
   * Set only on an entry read with `payloads: 'reference'` (JournalListParams) whose payload is
   * stored out of line: `payload` is then null and this says what it was. docs/journal.md "Large payloads".
   */
  payloadRef?: PayloadRef;
}

/** A payload stored out of line: the SHA-256 (hex) of its JSON text and the size of that text in bytes. */
export interface PayloadRef {
  sha256: string;
  sizeBytes: number;
}

/** What a writer supplies; the store assigns seq and createdAt. */
export type NewJournalEntry = Omit<JournalEntry, 'runId' | 'seq' | 'createdAt' | 'payloadRef'>;

/** Fills the optional columns of a new entry with nulls so callers name only what they mean. */
export function newEntry(
  fields: Pick<NewJournalEntry, 'kind' | 'name' | 'status'> & Partial<NewJournalEntry>,
): NewJournalEntry {
  // Written out rather than spread over defaults: a spread here measured ~3 µs an entry on the hot path.
  return {
    scope: fields.scope ?? '',
    kind: fields.kind,
    name: fields.name,
    contentKey: fields.contentKey ?? '',
    occurrence: fields.occurrence ?? 0,
    status: fields.status,
    payload: fields.payload ?? null,
    error: fields.error ?? null,
    refSeq: fields.refSeq ?? null,
    idempotencyKey: fields.idempotencyKey ?? null,
    dedupeKey: fields.dedupeKey ?? null,
    usage: fields.usage ?? null,
    costUsd: fields.costUsd ?? null,
    attempt: fields.attempt ?? null,
  };
}

/** The payload of a `status` entry: the event a stream shows for a status change. */
export interface StatusPayload {
  status: RunStatus;
  output?: Json;
  error?: RunError;
}

/**
 * A run continuing on code other than the digest it was pinned to (drift policy `warn`, no live
 * replica serving its digest): the payload of its `status` entry named `drift`, journaled before
 * the execution on the new code (docs/recovery.md "Routing"). Not a status change (no `status`
 * key); replay skips it as it skips every `status` entry.
 */
export interface DriftPayload {
  drift: { from: string; to: string; policy: 'warn'; reason: string };
}

/**
 * The first entry a fork writes after the entries it kept (ForkRun, docs/forks.md): a `status`
 * entry named `fork`. Not a status change (no `status` key). `continued` lists the errors among
 * the kept entries that the source handled and went on from: replay re-throws them, as it did in
 * the source, instead of retrying them as an error the run died on.
 */
export interface ForkPayload {
  fork: { from: string; seq: number; continued: number[] };
}
