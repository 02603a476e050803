import { createHash } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import { createContextKey } from '@connectrpc/connect';

/*
 * mTLS: the verified client certificate of the connection a request arrived on, as a Connect
 * context value. Authentication (the API-key side of issue 19) maps it to a key; this file only
 * records it. Read it in an interceptor or handler with
 * `ctx.values.get(clientCertificateKey)` (or `req.contextValues` in an interceptor): undefined on
 * a plaintext port, when no certificate was presented (WAYMARK_TLS_CLIENT_AUTH=optional) or when
 * it did not verify against WAYMARK_TLS_CLIENT_CA_FILE.
 */

/**
 * What the server knows of a connection's verified client certificate (mTLS). Set on every
 * request's context as `clientCertificateKey` when the certificate chains
 * to the configured client CA; absent otherwise.
 */
export interface ClientCertificate {
  /** The subject as `CN=…,O=…` (RFC 4514 order is not promised; compare fingerprints for identity). */
  subject: string;
  /** The issuer, same form. */
  issuer: string;
  /** SHA-256 of the DER certificate, lowercase hex without colons: the stable identity to map to a key. */
  fingerprint256: string;
  serialNumber: string;
  /** Expiry as the certificate states it, ISO 8601. */
  validTo: string;
}

/** The verified client certificate of a TLS socket, or undefined (plaintext, none presented, or not verified). */
export function clientCertificateOf(socket: unknown): ClientCertificate | undefined {
  const tls = socket as Partial<TLSSocket> | undefined;
  if (!tls || typeof tls.getPeerCertificate !== 'function' || tls.authorized !== true) return undefined;
  const cert = tls.getPeerCertificate(false);
  if (!cert || !cert.raw) return undefined;
  return {
    subject: distinguishedName(cert.subject),
    issuer: distinguishedName(cert.issuer),
    fingerprint256: createHash('sha256').update(cert.raw).digest('hex'),
    serialNumber: cert.serialNumber,
    validTo: new Date(cert.valid_to).toISOString(),
  };
}

function distinguishedName(name: Record<string, string | string[] | undefined> | undefined): string {
  if (!name) return '';
  return Object.entries(name)
    .flatMap(([k, v]) => (Array.isArray(v) ? v.map((x) => `${k}=${x}`) : v === undefined ? [] : [`${k}=${v}`]))
    .join(',');
}

export const clientCertificateKey = createContextKey<ClientCertificate | undefined>(undefined, { description: 'waymark verified client certificate (mTLS)' });
