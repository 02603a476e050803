// access/: API keys: their format, hashing, creation, listing, revocation, and verification behind a short cache.
// Must not keep, log or return a secret after CreateKey answered it, and must not know the wire (server/auth.ts reads headers).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { ApiKeyNotFoundError } from '../../journal/errors.js';
import type { ApiKeyRecord, JournalStore } from '../../store/store.js';

/*
 * An API key's secret is `wmk_<id>_<secret>`: a 16-hex-digit id (64 random bits, the primary key,
 * safe to show and log) and 32 random bytes in base64url (256 bits). The store keeps the SHA-256
 * of the whole string. A fast hash is the right one here: bcrypt, scrypt and argon2 exist to slow
 * down guessing of low-entropy passwords, and nobody guesses 256 random bits; a slow hash on every
 * request would cost milliseconds of CPU per call (an easy denial of service) for no protection.
 * Verifying is a lookup by id, then a constant-time comparison of hashes.
 *
 * Verification must not cost a database round trip per request: each id's row (or its absence) is
 * cached for `cacheMs` (WAYMARK_AUTH_CACHE_MS, 5 s). A revocation is therefore seen at once by the
 * replica that made it (it evicts the id) and by every other replica within `cacheMs`
 * (docs/security.md "Revocation"). Concurrent misses for one id share one read.
 */

export const SCOPES = ['runs:read', 'runs:write', 'approvals:decide', 'signals:send', 'tools:serve', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);

export const API_KEY_DEFAULTS = { cacheMs: 5_000, cacheEntries: 10_000 };

const SECRET = /^wmk_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;
const FINGERPRINT = /^[0-9a-f]{64}$/;
const certEntry = (fingerprint: string) => `cert:${fingerprint}`;

/** An API key as the API shows it: the store's record without the hash. */
export interface ApiKey {
  id: string;
  name: string;
  namespace: string | null;
  scopes: Scope[];
  createdAt: Date;
  revokedAt: Date | null;
  createdByKeyId: string | null;
  /** Hex SHA-256 of the DER client certificate that authenticates as this key (mTLS), or null. */
  clientCertSha256: string | null;
}

export type KeyVerification =
  | { ok: true; key: ApiKey }
  | { ok: false; why: 'malformed' | 'invalid' }
  | { ok: false; why: 'revoked'; keyId: string };

/** The key id of a well-formed secret, or null. */
export function apiKeyId(secret: string): string | null {
  return SECRET.exec(secret)?.[1] ?? null;
}

export function secretHash(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function toApiKey(r: ApiKeyRecord): ApiKey {
  return {
    id: r.id, name: r.name, namespace: r.namespace, scopes: r.scopes.filter(isScope), createdAt: r.createdAt, revokedAt: r.revokedAt,
    createdByKeyId: r.createdByKeyId, clientCertSha256: r.clientCertSha256,
  };
}

interface Cached { record: ApiKeyRecord | null; at: number }

export interface ApiKeysOptions {
  store: JournalStore;
  /** How long a key's row (or its absence) is trusted without reading it again. */
  cacheMs?: number;
  /** Most ids cached at once; the oldest go first (random ids must not grow memory without bound). */
  cacheEntries?: number;
  now?: () => number;
}

export class ApiKeys {
  readonly #store: JournalStore;
  readonly #cacheMs: number;
  readonly #cacheEntries: number;
  readonly #now: () => number;
  readonly #cache = new Map<string, Cached>();
  readonly #reading = new Map<string, Promise<ApiKeyRecord | null>>();
  /** Reads of the store made to verify keys (tests and metrics: the hot path makes none). */
  storeReads = 0;

  constructor(options: ApiKeysOptions) {
    this.#store = options.store;
    this.#cacheMs = options.cacheMs ?? API_KEY_DEFAULTS.cacheMs;
    this.#cacheEntries = options.cacheEntries ?? API_KEY_DEFAULTS.cacheEntries;
    this.#now = options.now ?? (() => performance.now());
  }

  /**
   * Creates a key and returns it with its secret, which is never available again. With
   * `clientCertSha256`, a verified client certificate of that fingerprint also authenticates as
   * the key (ClientCertificateTakenError when another key has it).
   */
  async create(params: {
    name: string; namespace: string | null; scopes: Scope[]; createdByKeyId: string | null; clientCertSha256?: string | null;
  }): Promise<{ key: ApiKey; secret: string }> {
    const id = randomBytes(8).toString('hex');
    const secret = `wmk_${id}_${randomBytes(32).toString('base64url')}`;
    const record = await this.#store.apiKeyCreate({
      id, name: params.name, namespace: params.namespace, scopes: [...new Set(params.scopes)], secretHash: secretHash(secret),
      createdByKeyId: params.createdByKeyId, clientCertSha256: params.clientCertSha256 ?? null,
    });
    this.#cache.delete(id);
    if (record.clientCertSha256) this.#cache.delete(certEntry(record.clientCertSha256));
    return { key: toApiKey(record), secret };
  }

  async list(params: { namespace?: string | null; includeRevoked: boolean }): Promise<ApiKey[]> {
    return (await this.#store.apiKeyList(params)).map(toApiKey);
  }

  /** Revokes a key (idempotent); this replica refuses it from now on. ApiKeyNotFoundError for an unknown id. */
  async revoke(id: string): Promise<ApiKey> {
    const record = await this.#store.apiKeyRevoke({ id });
    this.#cache.delete(id);
    if (!record) throw new ApiKeyNotFoundError(id);
    if (record.clientCertSha256) this.#cache.delete(certEntry(record.clientCertSha256));
    return toApiKey(record);
  }

  /** Whether `secret` is an active key, and which; usually answered from the cache. */
  async verify(secret: string): Promise<KeyVerification> {
    const id = apiKeyId(secret);
    if (id === null) return { ok: false, why: 'malformed' };
    const record = await this.#record(id);
    if (!record) return { ok: false, why: 'invalid' };
    const given = Buffer.from(secretHash(secret), 'hex');
    const stored = Buffer.from(record.secretHash, 'hex');
    if (given.length !== stored.length || !timingSafeEqual(given, stored)) return { ok: false, why: 'invalid' };
    // Only a caller holding the real secret learns that it was revoked.
    if (record.revokedAt) return { ok: false, why: 'revoked', keyId: id };
    return { ok: true, key: toApiKey(record) };
  }

  /**
   * Whether a verified client certificate (its SHA-256 fingerprint, lowercase hex) is bound to an
   * active key, and which. The TLS layer has checked possession and the chain; this is the
   * binding. Cached as keys are, so a revocation is seen within `cacheMs` here too.
   */
  async verifyClientCertificate(fingerprint: string): Promise<KeyVerification> {
    if (!FINGERPRINT.test(fingerprint)) return { ok: false, why: 'malformed' };
    const record = await this.#cached(certEntry(fingerprint), () => this.#store.apiKeyGetByClientCert({ clientCertSha256: fingerprint }));
    if (!record) return { ok: false, why: 'invalid' };
    if (record.revokedAt) return { ok: false, why: 'revoked', keyId: record.id };
    return { ok: true, key: toApiKey(record) };
  }

  #record(id: string): Promise<ApiKeyRecord | null> {
    return this.#cached(id, () => this.#store.apiKeyGet({ id }));
  }

  /** One cache for both lookups: key ids (16 hex digits) and `cert:<fingerprint>` entries never collide. */
  async #cached(entry: string, read: () => Promise<ApiKeyRecord | null>): Promise<ApiKeyRecord | null> {
    const cached = this.#cache.get(entry);
    if (cached && this.#now() - cached.at < this.#cacheMs) return cached.record;
    const pending = this.#reading.get(entry);
    if (pending) return pending;
    const reading = (async () => {
      try {
        this.storeReads += 1;
        const record = await read();
        this.#cache.delete(entry);
        if (this.#cache.size >= this.#cacheEntries) this.#cache.delete(this.#cache.keys().next().value!);
        this.#cache.set(entry, { record, at: this.#now() });
        return record;
      } finally {
        this.#reading.delete(entry);
      }
    })();
    this.#reading.set(entry, reading);
    return reading;
  }
}
