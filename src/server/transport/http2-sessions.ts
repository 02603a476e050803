import type http2 from 'node:http2';

export interface SessionLimits {
  /** A connection with no open stream this long is closed (WAYMARK_HTTP2_IDLE_TIMEOUT_MS). */
  idleTimeoutMs: number;
  /** How often the server PINGs each connection (WAYMARK_HTTP2_KEEPALIVE_MS). */
  keepaliveMs: number;
  /** A PING not answered within this closes the connection (WAYMARK_HTTP2_PING_TIMEOUT_MS). */
  pingTimeoutMs: number;
}

export const DEFAULT_SESSION_LIMITS: SessionLimits = { idleTimeoutMs: 300_000, keepaliveMs: 30_000, pingTimeoutMs: 10_000 };

/**
 * Closes the HTTP/2 connections a client no longer uses or can no longer use, so their sockets and
 * file descriptors come back (issue 16, finding 2). Node answers a connection error (invalid HPACK,
 * an oversized frame header, a protocol error) with a GOAWAY, stops reading the socket, and keeps
 * it: a connection the client then closed stayed in CLOSE-WAIT for good, one it kept open stayed
 * ESTABLISHED, and the session object never learns of either. Two rules catch them and every
 * other dead connection, without telling the cases apart:
 *
 * - keepalive: each connection is PINGed every `keepaliveMs`; one that does not answer within
 *   `pingTimeoutMs` (the server's HTTP/2 layer gave up on it, the peer vanished or is frozen) is
 *   destroyed. Every HTTP/2 client answers PINGs by itself, even one whose application stopped
 *   reading, so live connections, quiet streams included, are left alone;
 * - idle: a connection with no open stream for `idleTimeoutMs` gets a GOAWAY and is closed.
 *
 * `session.destroy()` sends the GOAWAY (NO_ERROR) where it can and then destroys the socket.
 * test/server/http2-connections.test.ts pins both against a real server process's descriptors.
 */
export function superviseSession(session: http2.ServerHttp2Session, limits: SessionLimits): void {
  let open = 0;
  let idle: NodeJS.Timeout | undefined;
  let unanswered: NodeJS.Timeout | undefined;
  const stop = (): void => {
    clearTimeout(idle);
    clearTimeout(unanswered);
    clearInterval(keepalive);
  };
  const destroy = (): void => {
    stop();
    if (!session.destroyed) session.destroy();
  };
  const armIdle = (): void => {
    clearTimeout(idle);
    idle = setTimeout(destroy, limits.idleTimeoutMs).unref();
  };
  const keepalive = setInterval(() => {
    if (session.destroyed) return destroy();
    if (unanswered) return;
    unanswered = setTimeout(destroy, limits.pingTimeoutMs).unref();
    const sent = session.ping((err) => {
      if (err) return; // cancelled: the session is going away anyway
      clearTimeout(unanswered);
      unanswered = undefined;
    });
    if (!sent) destroy();
  }, limits.keepaliveMs).unref();
  session.on('stream', (stream: http2.ServerHttp2Stream) => {
    open++;
    clearTimeout(idle);
    stream.once('close', () => {
      if (--open === 0 && !session.destroyed) armIdle();
    });
  });
  session.once('close', stop);
  armIdle();
}
