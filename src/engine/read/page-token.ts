// read/: page tokens (AIP-158): the one file that encodes and decodes them and the store's cursors.
// Must not trust a token: one issued for other filters, another listing or edited by hand is refused.
import { createHash } from 'node:crypto';
import { WaymarkError } from '../../journal/errors.js';
import { decodeRunCursor } from '../../store/run-cursor.js';
import { decodeSuspensionCursor } from '../../store/suspension-cursor.js';
import type { FieldViolation } from '../errors.js';

/*
 * Page tokens (AIP-158): opaque to clients, validated here, the one file that encodes and decodes
 * them. A token names the listing it belongs to and a hash of the filters it was issued for, so a
 * token replayed with other filters, for another listing, or edited by hand is refused
 * (InvalidPageTokenError: INVALID_ARGUMENT on `page_token`) instead of answering a wrong page. It
 * carries the store's own opaque cursor (or, for a journal, the last seq), which is decoded here
 * too before the store sees it. Pinned by test/server/rpc-runs-read.test.ts and rpc-approvals.test.ts.
 */

/** Which listing issued a token. */
export type Listing = 'runs' | 'journal' | 'approvals' | 'schedules';

/** A page token that is not ours, was issued for another listing or other filters. */
export class InvalidPageTokenError extends WaymarkError {
  /** The same reason and field as any other malformed request field (docs/api.md "Errors"). */
  readonly reason = 'INVALID_REQUEST';
  readonly violations: FieldViolation[];
  constructor(description: string) {
    super(`the request is invalid: page_token: ${description}`);
    this.violations = [{ field: 'page_token', description }];
  }
}

interface TokenBody {
  v: 1;
  /** Which listing issued it. */
  l: string;
  /** Hash of the filters. */
  f: string;
  /** The store's cursor (or, for the journal, the last seq). */
  c: string;
}

/** Throws for a cursor the listing's store (or the journal) never issued. */
const CURSOR_CHECKS: Record<Listing, (cursor: string) => void> = {
  runs: decodeRunCursor,
  approvals: decodeSuspensionCursor,
  // The last schedule id of the previous page (ScheduleService ids are 1-128 of these characters).
  schedules: (text) => {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(text)) throw new TypeError('not a schedule id');
  },
  journal: (text) => {
    // A seq is a PostgreSQL integer: bounded, so an edited token never fails in SQL.
    if (!/^\d{1,10}$/.test(text) || Number(text) > 2_147_483_647) throw new TypeError('not a seq');
  },
};

function filterHash(filter: unknown): string {
  return createHash('sha256').update(JSON.stringify(filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).digest('base64url').slice(0, 16);
}

export function encodePageToken(listing: Listing, filter: unknown, cursor: string): string {
  const body: TokenBody = { v: 1, l: listing, f: filterHash(filter), c: cursor };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/**
 * The cursor inside `token`, or null for an empty token. Throws InvalidPageTokenError for a token
 * that is not ours, was issued for another listing or other filters, or whose cursor is not one
 * the listing issued.
 */
export function decodePageToken(token: string, listing: Listing, filter: unknown): string | null {
  if (token === '') return null;
  const notOurs = 'is not a page token this server issued; pass next_page_token unchanged';
  let body: Partial<TokenBody>;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<TokenBody>;
  } catch {
    throw new InvalidPageTokenError(notOurs);
  }
  if (body === null || typeof body !== 'object' || body.v !== 1 || typeof body.c !== 'string' || typeof body.l !== 'string') {
    throw new InvalidPageTokenError(notOurs);
  }
  if (body.l !== listing) throw new InvalidPageTokenError(`was issued by another listing (${body.l}), not this one`);
  if (body.f !== filterHash(filter)) {
    throw new InvalidPageTokenError('was issued for other filters; send the same filters as the first page, or start again without a token');
  }
  try {
    CURSOR_CHECKS[listing](body.c);
  } catch {
    throw new InvalidPageTokenError(notOurs);
  }
  return body.c;
}
