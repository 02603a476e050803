// access/: stream tokens: short-lived, read-only bearer tokens for one run of one namespace, signed with HMAC-SHA256.
// Must not read the store: a token is verified from its own bytes and the server secret alone, on any replica.
import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * A stream token is `wms_<payload>.<signature>`: the payload is base64url JSON
 * `{ "v": 1, "ns": namespace, "run": run id, "exp": expiry in ms since the epoch }`, the signature
 * base64url HMAC-SHA256 of `wms_<payload>` under the first of the server's secrets
 * (WAYMARK_STREAM_TOKEN_SECRET, shared by every replica). Any of the secrets verifies, so a secret
 * is rotated by putting the new one first and dropping the old one after the longest token
 * lifetime (docs/security.md "Stream tokens"). Expiry is checked on the verifying replica's clock:
 * replicas' clocks must agree to within seconds (NTP), which the short lifetime tolerates.
 */

export const STREAM_TOKEN_DEFAULTS = { ttlMs: 5 * 60_000, maxTtlMs: 60 * 60_000 };
/** A secret shorter than this (characters) is refused by the settings. */
export const MIN_SECRET_LENGTH = 32;

const TOKEN = /^wms_([A-Za-z0-9_-]{1,1024})\.([A-Za-z0-9_-]{43})$/;

export type StreamTokenVerification =
  | { ok: true; namespace: string; runId: string; expiresAt: Date }
  | { ok: false; why: 'malformed' | 'invalid' | 'expired' };

export function isStreamToken(text: string): boolean {
  return text.startsWith('wms_');
}

export class StreamTokens {
  readonly #secrets: string[];
  readonly #now: () => number;

  constructor(options: { secrets: string[]; now?: () => number }) {
    if (options.secrets.length === 0) throw new TypeError('StreamTokens needs at least one secret');
    this.#secrets = options.secrets;
    this.#now = options.now ?? Date.now;
  }

  mint(params: { namespace: string; runId: string; ttlMs: number }): { token: string; expiresAt: Date } {
    const exp = this.#now() + params.ttlMs;
    const payload = Buffer.from(JSON.stringify({ v: 1, ns: params.namespace, run: params.runId, exp }), 'utf8').toString('base64url');
    return { token: `wms_${payload}.${sign(this.#secrets[0]!, `wms_${payload}`).toString('base64url')}`, expiresAt: new Date(exp) };
  }

  verify(token: string): StreamTokenVerification {
    const m = TOKEN.exec(token);
    if (!m) return { ok: false, why: 'malformed' };
    const signature = Buffer.from(m[2]!, 'base64url');
    const signed = `wms_${m[1]!}`;
    if (!this.#secrets.some((s) => timingSafeEqual(sign(s, signed), signature))) return { ok: false, why: 'invalid' };
    let claims: { v?: unknown; ns?: unknown; run?: unknown; exp?: unknown };
    try {
      claims = JSON.parse(Buffer.from(m[1]!, 'base64url').toString('utf8')) as typeof claims;
    } catch {
      return { ok: false, why: 'invalid' };
    }
    if (claims.v !== 1 || typeof claims.ns !== 'string' || typeof claims.run !== 'string' || typeof claims.exp !== 'number') return { ok: false, why: 'invalid' };
    if (claims.exp <= this.#now()) return { ok: false, why: 'expired' };
    return { ok: true, namespace: claims.ns, runId: claims.run, expiresAt: new Date(claims.exp) };
  }
}

function sign(secret: string, text: string): Buffer {
  return createHmac('sha256', secret).update(text, 'utf8').digest();
}
