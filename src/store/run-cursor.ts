import { isRunId } from './run-id.js';

/**
 * The opaque page cursor of runList: the (createdAt, id) of the last run of a page. Runs list newest
 * first with id as the tie-breaker, so the next page is everything strictly after that pair.
 * Both stores keep createdAt at millisecond precision so the pair round-trips through a JS Date.
 */
export interface RunCursor {
  createdAt: Date;
  id: string;
}

/** What encodeRunCursor writes (Date.toISOString of a year 1970-9999). */
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
/** 9999-12-31T23:59:59.999Z: no run is created later, and the ISO form has four-digit years until then. */
const MAX_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function encodeRunCursor(cursor: RunCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id]), 'utf8').toString('base64url');
}

/** Decodes a cursor from encodeRunCursor; anything else is a caller error (TypeError). */
export function decodeRunCursor(text: string): RunCursor {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (Array.isArray(parsed) && parsed.length === 2 && typeof parsed[0] === 'string' && typeof parsed[1] === 'string') {
      const createdAt = new Date(parsed[0]);
      // Bounded to what a run's createdAt can be (and PostgreSQL's timestamptz parses): an edited
      // token is refused here instead of failing in SQL (issue 16, finding 4).
      const t = createdAt.getTime();
      if (ISO.test(parsed[0]) && t >= 0 && t <= MAX_TIME && isRunId(parsed[1])) return { createdAt, id: parsed[1] };
    }
  } catch {
    // fall through to the error below
  }
  throw new TypeError('runList cursor is not one this store issued; pass nextCursor from a previous page unchanged');
}

export function assertPageSize(pageSize: number): void {
  if (!Number.isInteger(pageSize) || pageSize < 1) {
    throw new TypeError(`runList pageSize must be a positive integer, got ${pageSize}`);
  }
}
