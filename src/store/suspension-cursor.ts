import { isRunId } from './run-id.js';

/**
 * The opaque page cursor of suspensionList: the position of the last suspension of a page, in
 * its order (entry createdAt, run id, seq). The time is in microseconds since the epoch, as a
 * decimal string, because journal timestamps in PostgreSQL carry microseconds and a JS Date
 * would round them away (the next page would then repeat or skip entries).
 */
export interface SuspensionCursor {
  createdAtMicros: bigint;
  runId: string;
  seq: number;
}

export function encodeSuspensionCursor(cursor: SuspensionCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAtMicros.toString(), cursor.runId, cursor.seq]), 'utf8').toString('base64url');
}

/** Decodes a cursor from encodeSuspensionCursor; anything else is a caller error (TypeError). */
export function decodeSuspensionCursor(text: string): SuspensionCursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 3 && typeof parsed[0] === 'string' && /^\d{1,20}$/.test(parsed[0]) &&
      typeof parsed[1] === 'string' && isRunId(parsed[1]) && Number.isSafeInteger(parsed[2]) && (parsed[2] as number) >= 0) {
      return { createdAtMicros: BigInt(parsed[0]), runId: parsed[1], seq: parsed[2] as number };
    }
  } catch {
    // fall through to the error below
  }
  throw new TypeError('suspensionList cursor is not one this store issued; pass nextCursor from a previous page unchanged');
}

/** Orders two positions as suspensionList does. */
export function compareSuspensionPosition(a: SuspensionCursor, b: SuspensionCursor): number {
  if (a.createdAtMicros !== b.createdAtMicros) return a.createdAtMicros < b.createdAtMicros ? -1 : 1;
  if (a.runId !== b.runId) return a.runId < b.runId ? -1 : 1;
  return a.seq - b.seq;
}
