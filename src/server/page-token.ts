import { createHash } from 'node:crypto';
import { InvalidRequestError } from './request-validation.js';

/*
 * Page tokens (AIP-158): opaque to clients, validated here. A token names the listing it belongs
 * to and a hash of the filters it was issued for, so a token replayed with other filters, for
 * another listing, or edited by hand is INVALID_ARGUMENT on `page_token` instead of a wrong page.
 * It carries the store's own cursor, which `check` (the store's decoder) validates too.
 */

interface TokenBody {
  v: 1;
  /** Which listing issued it: `runs`, `journal`, `approvals`. */
  l: string;
  /** Hash of the filters. */
  f: string;
  /** The store's cursor (or, for the journal, the last seq). */
  c: string;
}

function filterHash(filter: unknown): string {
  return createHash('sha256').update(JSON.stringify(filter, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))).digest('base64url').slice(0, 16);
}

export function encodePageToken(listing: string, filter: unknown, cursor: string): string {
  const body: TokenBody = { v: 1, l: listing, f: filterHash(filter), c: cursor };
  return Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
}

/**
 * The cursor inside `token`, or null for an empty token. Throws InvalidRequestError (field
 * `page_token`) for a token that is not ours, was issued for another listing or other filters, or
 * whose cursor `check` rejects.
 */
export function decodePageToken(token: string, listing: string, filter: unknown, check: (cursor: string) => void): string | null {
  if (token === '') return null;
  const refuse = (why: string): never => {
    throw new InvalidRequestError([{ field: 'page_token', description: why }]);
  };
  let body: Partial<TokenBody>;
  try {
    body = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Partial<TokenBody>;
  } catch {
    return refuse('is not a page token this server issued; pass next_page_token unchanged');
  }
  if (body === null || typeof body !== 'object' || body.v !== 1 || typeof body.c !== 'string' || typeof body.l !== 'string') {
    return refuse('is not a page token this server issued; pass next_page_token unchanged');
  }
  if (body.l !== listing) return refuse(`was issued by another listing (${body.l}), not this one`);
  if (body.f !== filterHash(filter)) return refuse('was issued for other filters; send the same filters as the first page, or start again without a token');
  try {
    check(body.c);
  } catch {
    return refuse('is not a page token this server issued; pass next_page_token unchanged');
  }
  return body.c;
}
