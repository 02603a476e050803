import { type Interceptor, type Transport } from '@connectrpc/connect';
import { createGrpcTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { SecureClientSessionOptions } from 'node:http2';
import type { TlsOptions, TokenSource } from './options.js';

/*
 * The default transport: gRPC over Node's HTTP/2 (h2c, or TLS with the CA and client certificate
 * given here rather than NODE_EXTRA_CA_CERTS), one connection per client, a bearer token on
 * every call.
 */

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
  guardSessions(sessions);
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

interface SessionState {
  t?: string;
  conn?: { on?: (event: string, listener: () => void) => unknown };
}

/**
 * connect-node 2.1 destroys a connection that receives GOAWAY with no open streams, and Node
 * raises that error on the session later; when the manager has detached its listeners by then,
 * it becomes an uncaught exception that ends the application (connect-es issue 1768). A rolling
 * restart of the server sends exactly that GOAWAY to idle connections. A listener of our own on
 * each session that becomes ready keeps the error from being uncaught; connect-node still
 * handles it while it listens. Applied only when the manager's internals look as expected.
 */
function guardSessions(sessions: Http2SessionManager): void {
  const manager = sessions as unknown as { setState?: (state: SessionState) => void };
  const setState = manager.setState;
  if (typeof setState !== 'function') return;
  manager.setState = function (this: unknown, state: SessionState) {
    if (state?.t === 'ready' && typeof state.conn?.on === 'function') state.conn.on('error', () => undefined);
    setState.call(this, state);
  };
}
