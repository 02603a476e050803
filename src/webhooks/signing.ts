import { createHmac, randomBytes } from 'node:crypto';

/*
 * Standard Webhooks signatures: the signed content is `${id}.${timestamp}.${body}` (timestamp in
 * whole seconds), the key is the base64 after the `whsec_` prefix, the signature is
 * `v1,` + base64(HMAC-SHA256(key, content)). During a key rotation every secret that still signs
 * adds its own `v1,…`, separated by spaces, so a receiver holding either secret verifies.
 */

const PREFIX = 'whsec_';

/** A new endpoint secret: 32 random bytes, as `whsec_<base64>`. */
export function newWebhookSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

/** Whether `secret` has the `whsec_<base64>` form with at least 16 key bytes. */
export function isWebhookSecret(secret: string): boolean {
  if (!secret.startsWith(PREFIX)) return false;
  const b64 = secret.slice(PREFIX.length);
  return /^[A-Za-z0-9+/]+={0,2}$/.test(b64) && Buffer.from(b64, 'base64').length >= 16;
}

export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given (newest first). */
export function webhookHeaders(params: { id: string; timestampSeconds: number; body: string; secrets: readonly string[] }): Record<string, string> {
  return {
    'webhook-id': params.id,
    'webhook-timestamp': String(params.timestampSeconds),
    'webhook-signature': params.secrets.map((s) => signatureOf(s, params.id, params.timestampSeconds, params.body)).join(' '),
  };
}
