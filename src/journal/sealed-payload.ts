import type { Json } from './run.js';

/*
 * A sealed payload: the journal form of a value a tool marked secret (defineTool({ secret: true })),
 * encrypted with AES-256-GCM before it is written (engine/access/payload-sealer.ts). Only the
 * run's own replay opens it; every read for people (GetJournal, event streams) shows REDACTED.
 */

export const SEALED_KEY = '$waymarkSealed';

export interface SealedEnvelope {
  /** Envelope version. */
  v: 1;
  /** Which key (WAYMARK_SECRETS_KEYS id) sealed it, so keys can rotate. */
  kid: string;
  /** base64 of the 12-byte nonce, the ciphertext and the 16-byte GCM tag. */
  iv: string;
  data: string;
  tag: string;
}

/** What reads show instead of a sealed value. */
export const REDACTED: Json = { redacted: true, reason: 'secret' };

export function sealedEnvelope(value: Json | undefined): SealedEnvelope | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 1 || keys[0] !== SEALED_KEY) return null;
  const e = value[SEALED_KEY] as Partial<SealedEnvelope> | null;
  if (!e || typeof e !== 'object' || e.v !== 1 || typeof e.kid !== 'string' || typeof e.iv !== 'string' || typeof e.data !== 'string' || typeof e.tag !== 'string') return null;
  return e as SealedEnvelope;
}

/** `value`, or REDACTED when it is sealed. */
export function redactSealed(value: Json): Json {
  return sealedEnvelope(value) ? REDACTED : value;
}
