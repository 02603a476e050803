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

/** 9999-12-31T23:59:59.999999Z in microseconds since the epoch. */
const MAX_MICROS = 253_402_300_799_999_999n;
/** Journal seqs are PostgreSQL integers. */
const MAX_SEQ = 2_147_483_647;

export function encodeSuspensionCursor(cursor: SuspensionCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAtMicros.toString(), cursor.runId, cursor.seq]), 'utf8').toString('base64url');
}

/** Decodes a cursor from encodeSuspensionCursor; anything else is a caller error (TypeError). */
export function decodeSuspensionCursor(text: string): SuspensionCursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    // Bounded to what a journal entry can hold (a timestamp before year 10000, an int4 seq), so an
    // edited token is refused here instead of failing in SQL (issue 16, finding 4).
    if (Array.isArray(parsed) && parsed.length === 3 && typeof parsed[0] === 'string' && /^\d{1,18}$/.test(parsed[0]) &&
      BigInt(parsed[0]) <= MAX_MICROS && typeof parsed[1] === 'string' && isRunId(parsed[1]) &&
      Number.isInteger(parsed[2]) && (parsed[2] as number) >= 0 && (parsed[2] as number) <= MAX_SEQ) {
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
