import { type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { SecureClientSessionOptions } from 'node:http2';

/*
 * The default transport: gRPC over Node's HTTP/2 (h2c, or TLS with the CA and client certificate
 * given here rather than NODE_EXTRA_CA_CERTS), one connection per client, a bearer token on
 * every call.
 */

/** TLS settings; `true` uses Node's default trust store. */
export interface TlsOptions {
  /** PEM of the CA (or CAs) to trust instead of Node's defaults, e.g. a cluster's own CA. */
  ca?: string | Uint8Array | undefined;
  /** PEM client certificate, for a server that asks for one (mTLS). */
  cert?: string | Uint8Array | undefined;
  /** PEM private key of `cert`. */
  key?: string | Uint8Array | undefined;
  /** The name to verify the server's certificate against, when it differs from the address's host. */
  serverName?: string | undefined;
}

/** A bearer token, or a function returning the current one (called before every call). */
export type TokenSource = string | (() => string | Promise<string>);

export interface TransportSettings {
  address: string;
  tls: boolean | TlsOptions | undefined;
  token: TokenSource | undefined;
}

export function createDefaultTransport(s: TransportSettings): { transport: Transport; sessions: Http2SessionManager } {
  const baseUrl = `${s.tls ? 'https' : 'http'}://${s.address}`;
  const secure: SecureClientSessionOptions = {};
  if (typeof s.tls === 'object') {
    if (s.tls.ca !== undefined) secure.ca = pem(s.tls.ca);
    if (s.tls.cert !== undefined) secure.cert = pem(s.tls.cert);
    if (s.tls.key !== undefined) secure.key = pem(s.tls.key);
    if (s.tls.serverName !== undefined) secure.servername = s.tls.serverName;
  }
  // Keep idle follow-streams alive through proxies; 30 s is the smallest client ping interval
  // most servers and proxies accept.
  const sessions = new Http2SessionManager(baseUrl, { pingIntervalMs: 30_000, pingTimeoutMs: 10_000, idleConnectionTimeoutMs: 15 * 60_000 }, secure);
  const interceptors: Interceptor[] = [];
  const token = s.token;
  if (token) {
    interceptors.push((next) => async (req) => {
      req.header.set('authorization', `Bearer ${typeof token === 'string' ? token : await token()}`);
      return next(req);
    });
  }
  return { transport: createGrpcTransport({ baseUrl, sessionManager: sessions, interceptors, readMaxBytes: 16 << 20 }), sessions };
}

function pem(value: string | Uint8Array): string | Buffer {
  return typeof value === 'string' ? value : Buffer.from(value);
}
