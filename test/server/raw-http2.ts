import http2 from 'node:http2';
import net from 'node:net';
import { create, toBinary, type DescMessage, type DescMethod, type MessageInitShape } from '@bufbuild/protobuf';

/*
 * A hostile or broken client at the HTTP/2 level, built on node:http2 so a test controls what the
 * grpc-js and Connect clients never do: a tiny flow-control window, a stream nobody reads, a
 * connection dropped mid-write.
 */

/** One gRPC length-prefixed message (uncompressed). */
export function grpcFrame<D extends DescMessage>(desc: D, message: MessageInitShape<D>): Buffer {
  const bytes = toBinary(desc, create(desc, message));
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt32BE(bytes.length, 1);
  Buffer.from(bytes).copy(frame, 5);
  return frame;
}

export interface StalledReader {
  session: http2.ClientHttp2Session;
  /** The TCP connection under the session (destroy it to drop the connection without a GOAWAY). */
  socket: net.Socket;
  stream: http2.ClientHttp2Stream;
  /** Resolves once the server answered with headers (the handler runs and has written). */
  responded: Promise<void>;
}

/**
 * Opens a server stream with `windowBytes` of HTTP/2 stream window and never reads it: once the
 * server has sent that much, its writes block on flow control.
 */
export function stalledReader<D extends DescMessage>(
  url: string, method: DescMethod & { input: D }, request: MessageInitShape<D>, windowBytes = 1024,
  options: { localAddress?: string } = {},
): StalledReader {
  const { hostname, port } = new URL(url);
  // Another loopback address (127.0.0.2) is another client to the server's per-client limits.
  const socket = net.connect({ port: Number(port), host: hostname, ...(options.localAddress ? { localAddress: options.localAddress } : {}) });
  const session = http2.connect(url, { settings: { initialWindowSize: windowBytes }, createConnection: () => socket });
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST', ':path': `/${method.parent.typeName}/${method.name}`, 'content-type': 'application/grpc', te: 'trailers',
  });
  stream.on('error', () => {});
  stream.pause();
  stream.end(grpcFrame(method.input, request));
  const responded = new Promise<void>((resolve, reject) => {
    stream.once('response', () => resolve());
    stream.once('close', () => reject(new Error('the stream closed before the server answered')));
  });
  return { session, socket, stream, responded };
}

export interface RawResponse {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One request over its own connection; resolves with everything the server answered. */
export async function rawRequest(url: string, headers: http2.OutgoingHttpHeaders, body?: Buffer, options: { localAddress?: string } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const session = options.localAddress
    ? http2.connect(url, { createConnection: () => net.connect({ port: Number(port), host: hostname, localAddress: options.localAddress }) })
    : http2.connect(url);
  session.on('error', () => {});
  try {
    return await new Promise<RawResponse>((resolve, reject) => {
      const stream = session.request({ ':method': 'POST', ...headers });
      let responseHeaders: http2.IncomingHttpHeaders = {};
      let trailers: http2.IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => (responseHeaders = h));
      stream.on('trailers', (t) => (trailers = t));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('close', () => resolve({ headers: responseHeaders, trailers, body: Buffer.concat(chunks) }));
      stream.end(body);
    });
  } finally {
    session.close();
  }
}
