import http from 'node:http';
import type http2 from 'node:http2';
import type { Socket } from 'node:net';
import { Code, ConnectError } from '@connectrpc/connect';
import type { UniversalHandler } from '@connectrpc/connect/protocol';
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from '@connectrpc/connect-node';
import type { ContextValues } from '@connectrpc/connect';
import type { Logger } from 'pino';
import type { ConsoleAssets } from './console-assets.js';
import { ensureErrorInfo, unroutedResponse } from '../errors/framework-errors.js';
import { clampTimeoutHeaders } from './request-timeout.js';

/*
 * HTTP/1.1 beside h2c on the plaintext port. A browser never speaks HTTP/2 without TLS, so the web
 * console at http://127.0.0.1:50051/console/ (waymark dev) and its Connect calls arrive as
 * HTTP/1.1; gRPC clients keep h2c on the same port. Each new connection is told apart by its
 * first bytes: the HTTP/2 preface ("PRI * HTTP/2.0") goes to Node's HTTP/2 server as before,
 * anything else to a node:http server. Node's HTTP/2 session takes over the bytes already read
 * (it drains socket.readableLength), so nothing is replayed by hand.
 *
 * Served over HTTP/1.1: the console's files and the Connect protocol (and gRPC-Web) through the
 * same router, interceptors (auth, limits, logging) and handlers as HTTP/2; plain gRPC needs
 * trailers and stays HTTP/2-only. The per-client unread-bytes limit of http2-handler.ts does not
 * apply here: an HTTP/1.1 response has one connection to itself, whose closing frees it, and
 * connect-node's writer waits for the socket to drain. Over TLS the server offers h2 only
 * (browsers negotiate it), so this bridge is the plaintext port's alone.
 */

const PREFACE = Buffer.from('PRI * HTTP/2.0');
/**
 * How long a new connection may stay silent before its first bytes: until then it is neither an
 * HTTP/2 session (whose idle timeout would apply, http2-sessions.ts) nor an HTTP/1.1 request
 * (whose header timeout would), so this bounds the sockets a silent client can hold.
 */
export const FIRST_BYTES_MS = 10_000;

export type Http1RequestListener = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface Http1Settings {
  paths: ReadonlyMap<string, UniversalHandler>;
  contextValues: (req: http.IncomingMessage) => ContextValues;
  console: ConsoleAssets | undefined;
  logger: Logger;
}

/** The HTTP/1.1 side's request listener: the console first, then the Connect router's handlers. */
export function createHttp1Listener(s: Http1Settings): Http1RequestListener {
  return (req, res) => {
    if (s.console?.handle(req, res)) return;
    const path = (req.url ?? '').split('?', 1)[0]!;
    const request = { path, contentType: req.headers['content-type'] ?? '' };
    const handler = s.paths.get(path);
    const answer = handler
      ? (clampTimeoutHeaders(req.headers), handler(universalRequestFromNodeRequest(req, res, undefined, s.contextValues(req))))
        .then((uRes) => uRes.status === 405 || uRes.status === 415 ? unroutedResponse(request, uRes.status) : ensureErrorInfo(uRes, handler.method))
      : Promise.resolve(unroutedResponse(request, 404));
    answer
      .then((uRes) => universalResponseToNodeResponse(uRes, res))
      .catch((err: unknown) => {
        const code = ConnectError.from(err).code;
        if (code === Code.Canceled || code === Code.Aborted) return;
        s.logger.error({ err, rpc: path }, 'writing the HTTP/1.1 response failed');
      });
  };
}

export interface Http1Side {
  /** At shutdown: closes idle keep-alive connections now and each busy one when its response ends. */
  drain(): void;
}

/**
 * Makes the h2c `server` also accept HTTP/1.1 connections, answered by `listener`. Call right after
 * creating the server, before other 'connection' listeners are added (they keep seeing every
 * socket, so shutdown's destroy-after-grace covers these too).
 */
export function acceptHttp1(server: http2.Http2Server, listener: Http1RequestListener): Http1Side {
  let draining = false;
  const http1 = http.createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    res.once('finish', () => {
      if (draining) req.socket.end();
    });
    if (draining) res.setHeader('connection', 'close');
    listener(req, res);
  });
  const h2 = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  server.on('connection', (socket: Socket) => {
    const silent = setTimeout(() => socket.destroy(), FIRST_BYTES_MS);
    socket.once('close', () => clearTimeout(silent));
    socket.once('data', (first: Buffer) => {
      clearTimeout(silent);
      socket.pause();
      socket.unshift(first);
      const isH2 = first.subarray(0, PREFACE.length).equals(PREFACE.subarray(0, Math.min(first.length, PREFACE.length)));
      if (isH2) {
        for (const l of h2) l.call(server, socket);
      } else {
        http1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  return {
    drain: () => {
      draining = true;
      http1.closeIdleConnections();
    },
  };
}
