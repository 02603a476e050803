import http2 from 'node:http2';
import { setMaxListeners } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { createContextValues, type ConnectRouter, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { authInterceptor, type AuthOptions } from '../auth/auth.js';
import { clientCertificateKey, clientCertificateOf } from '../auth/client-certificate.js';
import { clientKey, clientLimitsInterceptor, DEFAULT_CLIENT_LIMITS, type ClientLimits } from './client-limits.js';
import { ClientBuffers } from './client-buffers.js';
import { createHttp2Handler } from './http2-handler.js';
import { acceptHttp1, type Http1Side } from './http1-bridge.js';
import type { ConsoleAssets } from './console-assets.js';
import { DEFAULT_SESSION_LIMITS, superviseSession, type SessionLimits } from './http2-sessions.js';
import { tracingInterceptor } from './tracing-interceptor.js';
import { loggingInterceptor } from './logging-interceptor.js';
import { serverShutdownError, shutdownSignalKey } from './shutdown-signal.js';
import { loadTlsFiles, TLS_DEFAULTS, watchTlsFiles, type TlsFiles } from './tls.js';

export interface GrpcServerOptions {
  /** Interface to bind, e.g. `127.0.0.1`, `0.0.0.0` or `::`. */
  host: string;
  /** 0 picks a free port (tests); `GrpcServer.port` tells which. */
  port: number;
  /** Registers the services, e.g. `(router) => { registerRunService(router); registerHealthService(router, health); }`. */
  routes: (router: ConnectRouter) => void;
  logger: Logger;
  /** Largest request message accepted; larger ones fail with RESOURCE_EXHAUSTED before a handler runs. */
  maxRequestBytes: number;
  /** Run after the logging interceptor, innermost last (metrics, validation, error mapping). */
  interceptors?: Interceptor[];
  /** A span per RPC (tracing-interceptor.ts), first of the interceptors; only when tracing is on. */
  tracing?: boolean;
  /** Idle timeout and keepalive of each connection (http2-sessions.ts); defaults DEFAULT_SESSION_LIMITS. */
  sessionLimits?: Partial<SessionLimits>;
  /** Request rate, open streams and unread bytes per client (client-limits.ts); defaults DEFAULT_CLIENT_LIMITS. */
  clientLimits?: Partial<ClientLimits>;
  /** Serve TLS (ALPN h2) with these files, reloaded when they change (tls.ts); absent: h2c. Throws TlsFileError when they do not load. */
  tls?: TlsFiles | undefined;
  /**
   * Who may call what (auth.ts, access-rules.ts). Required, so no server is started without a
   * decision: 'off' serves every call unauthenticated and is refused unless `host` is a loopback
   * address (WAYMARK_AUTH=off, docs/security.md).
   */
  auth: AuthOptions | 'off';
  /** Origins whose browser scripts may call the API (gRPC-Web, Connect), answered with CORS headers; none by default. */
  corsOrigins?: readonly string[];
  /** The web console served under /console/ (console-assets.ts, docs/console.md); none when absent. */
  console?: ConsoleAssets | undefined;
}

export interface GrpcServer {
  port: number;
  /** `host:port` as bound, IPv6 hosts in brackets. */
  address: string;
  /** `http://host:port` (h2c) or `https://host:port` (TLS), the base URL for Connect and gRPC clients. */
  url: string;
  /** Unread response bytes per client (client-buffers.ts), for diagnostics and tests. */
  clientBuffers: ClientBuffers;
  /**
   * Drains and stops the server; idempotent. Long-lived streams end at once with UNAVAILABLE
   * (clients resume elsewhere from their cursor), no new connections or calls are accepted, and
   * calls in flight get `graceMs` to finish. After that every handler's `ctx.signal` aborts with
   * UNAVAILABLE, and connections still open a moment later are destroyed.
   */
  close(graceMs: number): Promise<void>;
}

/** After the grace period, how long aborted handlers get to write their UNAVAILABLE status. */
const ABORT_FLUSH_MS = 200;

/** Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || /^::ffff:127\./.test(h);
}

/**
 * Serves gRPC, gRPC-Web and Connect on one port: h2c (HTTP/2 without TLS), or TLS with ALPN `h2`
 * when `tls` is given (certificate reloaded on change; client certificates verified against a CA
 * for mTLS and put on each request's context as `clientCertificateKey`). A TLS client must offer
 * `h2` in ALPN (browsers, grpc-js, grpc-go, Python grpcio and Node's http2 do); the plaintext port
 * also answers HTTP/1.1 (browsers: the console and Connect calls, http1-bridge.ts), and the web
 * console's files when `console` is given (console-assets.ts).
 */
export async function startGrpcServer(options: GrpcServerOptions): Promise<GrpcServer> {
  const { logger } = options;
  if (options.auth === 'off' && !isLoopbackHost(options.host)) {
    throw new Error(`refusing to serve ${options.host} with authentication off: only a loopback address (127.0.0.1, ::1) may run without it`);
  }
  // Two stages of shutdown: `draining` ends long-lived streams at the start of close() (handlers
  // read it through shutdownSignalKey); `stopping` is Connect's own shutdownSignal, which aborts
  // every handler's ctx.signal once the grace period is over.
  const draining = new AbortController();
  const stopping = new AbortController();
  // Every call in flight listens on both (Connect links each handler's signal to `stopping`, and
  // streams link theirs to `draining`) and stops listening when it ends: their number is the
  // calls in flight, not a leak, so Node's warning past ten listeners does not apply.
  setMaxListeners(0, draining.signal, stopping.signal);

  const clientLimits: ClientLimits = { ...DEFAULT_CLIENT_LIMITS, ...options.clientLimits };
  const clientBuffers = new ClientBuffers(clientLimits.bufferedBytes);
  const handler = createHttp2Handler({
    routes: options.routes,
    logger,
    buffers: clientBuffers,
    grpc: true,
    grpcWeb: true,
    connect: true,
    readMaxBytes: options.maxRequestBytes,
    // Strict JSON, as the protobuf JSON mapping specifies: an unknown field or enum name is
    // INVALID_ARGUMENT naming it, instead of being dropped (a dropped `statuses` filter listed every
    // run). Binary keeps protobuf's unknown-field tolerance; unknown enum numbers are refused by
    // request validation.
    jsonOptions: { ignoreUnknownFields: false },
    shutdownSignal: stopping.signal,
    interceptors: [
      ...(options.tracing ? [tracingInterceptor()] : []), loggingInterceptor(logger), clientLimitsInterceptor(clientLimits, clientBuffers),
      ...(options.auth === 'off' ? [] : [authInterceptor(options.auth)]), ...(options.interceptors ?? []),
    ],
    ...(options.corsOrigins?.length ? { corsOrigins: options.corsOrigins } : {}),
    console: options.console,
    // The client the limits count is the peer address: they run before authentication, so a flood
    // of made-up keys is limited too.
    contextValues: (req) => createContextValues()
      .set(shutdownSignalKey, draining.signal)
      .set(clientKey, req.socket.remoteAddress ?? 'unknown')
      .set(clientCertificateKey, clientCertificateOf(req.socket)),
  });
  let stopWatching = (): void => undefined;
  let http1: Http1Side | undefined;
  let server: http2.Http2Server | http2.Http2SecureServer;
  if (options.tls) {
    const tls = options.tls;
    const mtls = tls.clientCaFile !== undefined;
    const secure = http2.createSecureServer({
      ...loadTlsFiles(tls),
      allowHTTP1: false,
      requestCert: mtls,
      // `optional`: the handshake succeeds without a valid certificate; clientCertificateOf then
      // records none, since it reads only verified certificates (socket.authorized).
      rejectUnauthorized: mtls && (tls.clientAuth ?? TLS_DEFAULTS.clientAuth) === 'require',
    }, handler);
    stopWatching = watchTlsFiles(tls, logger, (context) => secure.setSecureContext(context));
    server = secure;
  } else {
    server = http2.createServer({}, handler);
    // Browsers speak HTTP/1.1 to an http:// address: the console and Connect calls (http1-bridge.ts).
    http1 = acceptHttp1(server, handler.http1);
  }

  const sessionLimits: SessionLimits = { ...DEFAULT_SESSION_LIMITS, ...options.sessionLimits };
  const sessions = new Set<http2.ServerHttp2Session>();
  // The accepted TCP sockets, under their sessions. Node's session.close() on a session whose
  // client has not yet sent the HTTP/2 preface (a connection just accepted, a port probe, a
  // slow client) marks the session destroyed without closing its socket, and server.close()
  // then waits for that socket forever: shutdown destroys what is left here after the grace.
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    superviseSession(session, sessionLimits);
  });
  // A misbehaving client must not take the process down; its session is already being torn down.
  server.on('sessionError', (err) => logger.debug({ err }, 'http2 session error'));

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error): void => reject(new Error(`cannot listen on ${options.host}:${options.port}: ${err.message}`, { cause: err }));
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  server.on('error', (err) => logger.error({ err }, 'grpc server error'));

  const bound = server.address() as AddressInfo;
  const scheme = options.tls ? 'https' : 'http';
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const address = `${host}:${bound.port}`;
  logger.info({ address, tls: options.tls !== undefined, mtls: options.tls?.clientCaFile !== undefined }, 'grpc server listening');

  let closing: Promise<void> | undefined;
  const close = (graceMs: number): Promise<void> =>
    (closing ??= (async () => {
      logger.info({ graceMs, connections: sockets.size }, 'grpc server draining');
      stopWatching();
      draining.abort(serverShutdownError());
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // GOAWAY: clients open no new streams here and reconnect elsewhere; open streams carry on.
      for (const session of sessions) session.close();
      http1?.drain();
      if (!(await settlesWithin(closed, graceMs))) {
        stopping.abort(serverShutdownError());
        if (!(await settlesWithin(closed, ABORT_FLUSH_MS))) {
          logger.warn({ connections: sockets.size }, 'grpc server destroying connections that outlived the grace period');
          for (const session of sessions) session.destroy();
          for (const socket of sockets) socket.destroy();
          await closed;
        }
      }
      logger.info('grpc server stopped');
    })());

  return { port: bound.port, address, url: `${scheme}://${address}`, clientBuffers, close };
}

async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
