import { randomBytes } from 'node:crypto';

const RUN_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * A new run id: a UUIDv7 (RFC 9562), so ids sort by creation time and inserts land at the right
 * edge of the primary-key index instead of scattering over it. Generated here rather than in SQL
 * because `uuidv7()` exists only from PostgreSQL 18 and DATABASE_URL may point at an older server.
 */
export function newRunId(nowMs: number = Date.now()): string {
  const b = randomBytes(16);
  const ms = BigInt(nowMs);
  for (let i = 0; i < 6; i++) b[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = (b[6]! & 0x0f) | 0x70; // version 7
  b[8] = (b[8]! & 0x3f) | 0x80; // RFC 9562 variant
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Whether `value` can be a run id. Stores answer RunNotFoundError for anything else before asking
 * the database, so a malformed id is "not found" (fail-closed) rather than a uuid syntax error.
 */
export function isRunId(value: string): boolean {
  return RUN_ID.test(value);
}
