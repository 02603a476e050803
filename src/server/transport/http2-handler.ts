import type http from 'node:http';
import http2 from 'node:http2';
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from '@connectrpc/connect';
import type { UniversalHandler, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest } from '@connectrpc/connect-node';
import type { Logger } from 'pino';
import type { ClientBuffers } from './client-buffers.js';
import { clientKey } from './client-limits.js';
import { corsPolicy } from '../auth/cors.js';
import { ensureErrorInfo, grpcCodeName, unroutedResponse } from '../errors/framework-errors.js';
import { faultRecordKey, logFault } from '../errors/server-faults.js';
import { clampTimeoutHeaders } from './request-timeout.js';
import type { ConsoleAssets } from './console-assets.js';
import { createHttp1Listener, type Http1RequestListener } from './http1-bridge.js';

/*
 * The HTTP/2 server's request listener: Connect's router (gRPC, gRPC-Web and Connect), with the
 * transport rules Waymark needs that connect-node's own adapter lacks:
 *
 * - Every response write settles when the stream closes. connect-node waits for 'drain' after a
 *   write the stream could not take at once, and a stream the client abandons while blocked on
 *   HTTP/2 flow control never drains: the handler stayed suspended at its `yield` forever, with its
 *   stream slot (issue 16, finding 1; test/server/stream-slots.test.ts). Here the write fails with
 *   CANCELLED instead, which is thrown into the handler, so its `finally` runs.
 * - What a client leaves unread is bounded (client-buffers.ts): each write is counted against its
 *   client until it is on the socket, and one that would take the client past its limit resets its
 *   stream with ENHANCE_YOUR_CALM instead (RESOURCE_EXHAUSTED for gRPC clients). Status frames (a
 *   Connect error body, a gRPC-Web trailer, a Connect end-of-stream message) always go out.
 * - Deadlines longer than Node's timers are clamped before Connect reads them (request-timeout.ts).
 * - Every error carries an ErrorInfo, those Connect raises before a handler runs included, and an
 *   unknown method is answered in the caller's protocol (framework-errors.ts).
 */

export interface Http2HandlerOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  contextValues: (req: http2.Http2ServerRequest | http.IncomingMessage) => ContextValues;
  logger: Logger;
  /** Unread response bytes per client (the client is the request's `clientKey`). */
  buffers: ClientBuffers;
  /** Browser origins answered with CORS headers (cors.ts); none when absent. */
  corsOrigins?: readonly string[];
  /** The web console's files, answered before the router (console-assets.ts); none when absent. */
  console?: ConsoleAssets | undefined;
}

export type Http2RequestListener = ((req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void) & {
  /** The same routes for HTTP/1.1 requests (browsers on the plaintext port, http1-bridge.ts). */
  http1: Http1RequestListener;
};

export function createHttp2Handler(options: Http2HandlerOptions): Http2RequestListener {
  const { logger } = options;
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], ...options });
  options.routes(router);
  const paths = new Map<string, UniversalHandler>(router.handlers.map((h) => [h.requestPath, h]));
  const cors = options.corsOrigins ? corsPolicy(options.corsOrigins) : null;

  const listener = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void => {
    if (options.console?.handle(req, res)) return;
    if (cors) {
      if (cors.preflight(req, res)) return;
      cors.decorate(req, res);
    }
    const path = (req.url ?? '').split('?', 1)[0]!;
    const request = { path, contentType: req.headers['content-type'] ?? '' };
    const handler = paths.get(path);
    if (!handler) {
      writeResponse(unroutedResponse(request, 404), res).catch(() => undefined);
      return;
    }
    clampTimeoutHeaders(req.headers);
    // A fault the logging interceptor logged is not logged again on its way out (server-faults.ts).
    const faults = { logged: false };
    const onFault = (err: ConnectError): void => logFault(logger, { rpc: handler.requestPath, code: grpcCodeName(err.code) }, err, faults);
    const values = options.contextValues(req).set(faultRecordKey, faults);
    const client = values.get(clientKey);
    const budget: WriteBudget = {
      take: (bytes) => options.buffers.take(client, bytes),
      give: (bytes) => options.buffers.give(client, bytes),
      refused: (bytes) => logger.warn({
        rpc: handler.requestPath, client, queuedBytes: options.buffers.queued(client), writeBytes: bytes, limitBytes: options.buffers.limitBytes,
      }, 'a client left too many response bytes unread (WAYMARK_CLIENT_MAX_BUFFERED_BYTES); its stream was reset'),
    };
    const uReq = universalRequestFromNodeRequest(req, undefined, values);
    handler(uReq)
      .then((uRes) => writeResponse(uRes.status === 405 || uRes.status === 415 ? unroutedResponse(request, uRes.status) : ensureErrorInfo(uRes, handler.method, onFault), res, budget))
      .catch((err: unknown) => {
        // The client went away (its stream closed or reset): nothing to answer, nobody to tell.
        const code = ConnectError.from(err).code;
        if (code === Code.Canceled || code === Code.Aborted) return;
        logger.error({ err, rpc: handler.requestPath }, 'writing the response failed');
      });
  };
  const http1 = createHttp1Listener({ paths, contextValues: options.contextValues, console: options.console, logger });
  return Object.assign(listener, { http1 });
}

/** A client's share of the buffered-bytes limit, as one response's writes see it. */
interface WriteBudget {
  take(bytes: number): boolean;
  give(bytes: number): void;
  refused(bytes: number): void;
}

/** The error a write fails with when its client holds its limit of unread bytes (the stream is reset). */
function bufferLimit(): ConnectError {
  return new ConnectError('the client left too many response bytes unread (WAYMARK_CLIENT_MAX_BUFFERED_BYTES); the stream was reset', Code.ResourceExhausted);
}

/**
 * Whether a chunk of `uRes` carries a status rather than a message: those are small, bounded
 * (error-mapping.ts), and must reach the client whatever it holds. Read once per response, after
 * its first chunk (its headers and status are final then).
 */
function statusChunks(uRes: UniversalServerResponse): (chunk: Uint8Array) => boolean {
  const type = uRes.header?.get('content-type') ?? '';
  if (type.startsWith('application/grpc-web')) return (chunk) => (chunk[0]! & 0x80) === 0x80;
  if (type.startsWith('application/grpc')) return () => false; // the status is in the trailers
  if (type.startsWith('application/connect+')) return (chunk) => (chunk[0]! & 0x02) === 0x02;
  const unaryError = uRes.status !== 200; // a Connect unary error body
  return () => unaryError;
}

/** The error a write fails with once the client has closed the stream. */
function streamClosed(): ConnectError {
  return new ConnectError('the client closed the stream', Code.Canceled);
}

function isClosed(res: http2.Http2ServerResponse): boolean {
  return res.stream.destroyed || res.stream.closed;
}

/** Writes a Connect response; rejects (and throws the reason into the handler) when the stream closes first. */
/**
 * `budget` as one stream uses it: what the stream still has counted is given back, all at once,
 * when it closes (one listener per stream, however many writes are outstanding).
 */
function streamBudget(res: http2.Http2ServerResponse, budget: WriteBudget): WriteBudget {
  let held = 0;
  res.stream.once('close', () => {
    if (held > 0) budget.give(held);
    held = 0;
  });
  return {
    take: (bytes) => {
      if (res.stream.closed || !budget.take(bytes)) return false;
      held += bytes;
      return true;
    },
    give: (bytes) => {
      const back = Math.min(bytes, held);
      held -= back;
      if (back > 0) budget.give(back);
    },
    refused: budget.refused,
  };
}

async function writeResponse(uRes: UniversalServerResponse, res: http2.Http2ServerResponse, whole?: WriteBudget): Promise<void> {
  const budget = whole && streamBudget(res, whole);
  const it = uRes.body?.[Symbol.asyncIterator]();
  try {
    if (it) {
      // Headers go out after the first chunk, so a handler can still set them before it yields.
      let chunk = await it.next();
      res.writeHead(uRes.status, nodeHeaders(uRes.header));
      const isStatus = statusChunks(uRes);
      for (; chunk.done !== true; chunk = await it.next()) {
        try {
          const bytes = chunk.value as Uint8Array;
          await writeChunk(res, bytes, isStatus(bytes) ? undefined : budget);
        } catch (err) {
          await it.throw?.(err).catch(() => undefined);
          throw err;
        }
      }
    }
    if (isClosed(res)) throw streamClosed();
    if (!res.headersSent) res.writeHead(uRes.status, nodeHeaders(uRes.header));
    if (uRes.trailer) res.addTrailers(nodeHeaders(uRes.trailer));
    await untilClosedOr(res, (done) => {
      res.end(() => done());
    });
  } finally {
    void it?.return?.(undefined).catch(() => undefined);
  }
}

function writeChunk(res: http2.Http2ServerResponse, chunk: Uint8Array, budget?: WriteBudget): Promise<void> {
  if (isClosed(res)) return Promise.reject(streamClosed());
  const bytes = chunk.byteLength;
  if (budget && !budget.take(bytes)) {
    budget.refused(bytes);
    // RST_STREAM is not flow-controlled: it goes out, and Node frees what the stream had queued.
    res.stream.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    return Promise.reject(bufferLimit());
  }
  // Counted until Node reports the bytes written to the socket, or the stream closes (streamBudget).
  return untilClosedOr(res, (done) => {
    const onDrain = (): void => done();
    const flushed = res.write(chunk, (err) => {
      budget?.give(bytes);
      if (err) done(err);
    });
    // Past the stream's high-water mark (HTTP/2 flow control): go on once it drains.
    if (flushed) done();
    else res.once('drain', onDrain);
    return () => res.off('drain', onDrain);
  });
}

/**
 * Runs `start(done)` and settles on the first `done`, or rejects with CANCELLED when the stream
 * closes before that; either way every listener is removed.
 */
function untilClosedOr(
  res: http2.Http2ServerResponse, start: (done: (err?: Error | null) => void) => (() => void) | void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const stream = res.stream;
    let settled = false;
    let cleanup: (() => void) | void = undefined;
    const done = (err?: Error | null): void => {
      if (settled) return;
      settled = true;
      stream.off('close', onClose);
      cleanup?.();
      if (err) reject(err);
      else resolve();
    };
    const onClose = (): void => done(streamClosed());
    stream.once('close', onClose);
    cleanup = start(done);
    if (settled) cleanup?.();
  });
}

function nodeHeaders(headers: Headers | undefined): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = Object.create(null) as http2.OutgoingHttpHeaders;
  headers?.forEach((value, key) => {
    out[key] = value;
  });
  return out;
}
