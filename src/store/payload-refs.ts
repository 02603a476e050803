import { createHash } from 'node:crypto';
import type { JournalEntry, NewJournalEntry, PayloadRef } from '../journal/journal-entry.js';
import type { Limits } from '../journal/limits.js';

/*
 * Which journal payloads are stored out of line (docs/journal.md "Large payloads"), shared by the
 * memory and Postgres stores so both answer alike. An `ok` entry's result or an emitted event (an
 * `info` entry other than the store's own `status` entries) whose JSON text is over Limits.payloadInlineBytes goes to the run's
 * payload table, once per distinct text, and the entry keeps its SHA-256 and size. Suspensions,
 * resolutions, intents and status entries stay inline: the store's own statements write or read
 * them (deadlines, waits, reservations, run outputs), and a resolution is bounded by the request limit.
 */

/** Whether an appended entry's payload, `sizeBytes` of JSON text, is stored out of line. */
export function storedOutOfLine(entry: Pick<NewJournalEntry, 'status' | 'kind'>, sizeBytes: number, limits: Limits): boolean {
  return sizeBytes > limits.payloadInlineBytes && (entry.status === 'ok' || (entry.status === 'info' && entry.kind !== 'status'));
}

/** A payload to store out of line: its reference and its JSON text. */
export interface OutOfLinePayload extends PayloadRef {
  text: string;
}

/**
 * Per entry, its out-of-line payload or null (`sizes` from assertEntriesFit). Null when no entry
 * has one, so the common append pays nothing past the size check it already made.
 */
export function outOfLinePayloads(entries: readonly NewJournalEntry[], sizes: readonly number[], limits: Limits): (OutOfLinePayload | null)[] | null {
  let any = false;
  const found = entries.map((e, i) => {
    if (!storedOutOfLine(e, sizes[i] ?? 0, limits)) return null;
    any = true;
    const text = JSON.stringify(e.payload);
    return { sha256: payloadSha256(text), sizeBytes: sizes[i]!, text };
  });
  return any ? found : null;
}

/** The hex SHA-256 of a payload's JSON text (UTF-8): its address in the run's payload table. */
export function payloadSha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The entry as a `payloads: 'reference'` read returns it when its payload is out of line: payload
 * null, payloadRef set. `ref` null: the entry unchanged.
 */
export function referenced(entry: JournalEntry, ref: PayloadRef | null): JournalEntry {
  if (ref === null) return entry;
  return { ...entry, payload: null, payloadRef: { sha256: ref.sha256, sizeBytes: ref.sizeBytes } };
}
