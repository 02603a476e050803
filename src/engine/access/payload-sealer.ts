// access/: seals and opens the journal payloads of tools marked secret (AES-256-GCM).
// Must not read settings or log values: the keys are handed in, and nothing here is logged.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { WaymarkError } from '../../journal/errors.js';
import type { Json } from '../../journal/run.js';
import { SEALED_KEY, sealedEnvelope } from '../../journal/sealed-payload.js';

/** A 256-bit key and the id stored with what it seals. */
export interface SealingKey {
  id: string;
  key: Buffer;
}

/** A sealed payload whose key is not configured (rotated out too early), or that does not open. */
export class SealedPayloadError extends WaymarkError {
  readonly reason = 'SEALED_PAYLOAD_UNREADABLE';
  constructor(readonly runId: string, detail: string) {
    super(`a secret tool payload of run ${runId} cannot be opened: ${detail}; keep every key id in WAYMARK_SECRETS_KEYS until no run needs it`);
  }
}

/**
 * Seals with the first key; opens with whichever key id the envelope names, so a key can be
 * rotated by putting the new one first and keeping the old ones after it. The run id is the
 * GCM additional data: a payload copied into another run's journal does not open there.
 */
export class PayloadSealer {
  private readonly byId: Map<string, Buffer>;
  private readonly current: SealingKey;

  constructor(keys: readonly SealingKey[]) {
    if (keys.length === 0) throw new RangeError('a PayloadSealer needs at least one key');
    for (const k of keys) if (k.key.length !== 32) throw new RangeError(`key "${k.id}" must be 32 bytes (AES-256), not ${k.key.length}`);
    this.current = keys[0]!;
    this.byId = new Map(keys.map((k) => [k.id, k.key]));
  }

  seal(value: Json, runId: string): Json {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(runId, 'utf8'));
    const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
    return {
      [SEALED_KEY]: { v: 1, kid: this.current.id, iv: iv.toString('base64'), data: data.toString('base64'), tag: cipher.getAuthTag().toString('base64') },
    };
  }

  /** The value sealed in `value`; a value that is not sealed (journaled before the tool was marked secret) is returned as it is. */
  open(value: Json, runId: string): Json {
    const envelope = sealedEnvelope(value);
    if (!envelope) return value;
    const key = this.byId.get(envelope.kid);
    if (!key) throw new SealedPayloadError(runId, `key id "${envelope.kid}" is not in WAYMARK_SECRETS_KEYS`);
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(envelope.iv, 'base64'));
      decipher.setAAD(Buffer.from(runId, 'utf8'));
      decipher.setAuthTag(Buffer.from(envelope.tag, 'base64'));
      const text = Buffer.concat([decipher.update(Buffer.from(envelope.data, 'base64')), decipher.final()]).toString('utf8');
      return JSON.parse(text) as Json;
    } catch {
      throw new SealedPayloadError(runId, 'it does not authenticate (another run\'s payload, or a corrupted one)');
    }
  }
}

/**
 * Parses WAYMARK_SECRETS_KEYS: comma-separated `id:base64` pairs, each key 32 bytes, the first
 * sealing. Throws a message naming what is wrong (never the key).
 */
export function parseSealingKeys(text: string): SealingKey[] {
  const keys = text.split(',').map((part) => part.trim()).filter(Boolean).map((part, i) => {
    const colon = part.indexOf(':');
    const id = colon > 0 ? part.slice(0, colon) : '';
    if (!/^[A-Za-z0-9_.-]{1,32}$/.test(id)) throw new Error(`key ${i + 1} must be id:base64 with an id of 1-32 letters, digits, "_", "." or "-"`);
    const key = Buffer.from(part.slice(colon + 1), 'base64');
    if (key.length !== 32) throw new Error(`key "${id}" must be 32 bytes in base64 (openssl rand -base64 32), not ${key.length}`);
    return { id, key };
  });
  if (keys.length === 0) throw new Error('must hold at least one id:base64 key');
  if (new Set(keys.map((k) => k.id)).size !== keys.length) throw new Error('key ids must be unique');
  return keys;
}
