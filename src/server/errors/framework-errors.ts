import type { DescMethod } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { encodeEnvelope, type UniversalServerResponse } from '@connectrpc/connect/protocol';
import { codeToHttpStatus, createEndStreamSerialization, endStreamFlag, errorFromJsonBytes, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findTrailerError, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import { trailerFlag, trailerParse, trailerSerialize } from '@connectrpc/connect/protocol-grpc-web';
import { ErrorInfoSchema, QuotaFailureSchema } from '../../gen/google/rpc/error_details_pb.js';
import { decodeErrorStatus, info, status } from './error-mapping.js';
import { INTERNAL_MESSAGE, isServerFault } from './server-faults.js';

/*
 * Every error leaves the server with a google.rpc.ErrorInfo (docs/api.md "Errors"), also those
 * Connect raises before any handler or interceptor runs: an unknown service or method, a content
 * type or HTTP method it does not serve, a malformed or oversized request body, an unknown
 * compression, a bad deadline, a deadline that passed (issue 16, finding 7). Connect has no error
 * hook for those, so the response is amended on its way out, once per protocol: the gRPC trailers,
 * the gRPC-Web trailer frame, the Connect error body or end-of-stream message. An error that
 * already has an ErrorInfo (every domain error, error-mapping.ts) passes unchanged. This is the one
 * hook for them: a request body that does not decode is MALFORMED_REQUEST here, with the field the
 * decoder names when it names one (error-mapping.ts decodeErrorStatus).
 */

type Detail = ConnectError['details'][number];

/**
 * A ConnectError carrying `details` (built here, or decoded from the wire), within the bounds every
 * status keeps (error-mapping.ts `status`): Connect's messages can echo a path, a content type or a key.
 */
const errorWith = (message: string, code: Code, details: Detail[]): ConnectError => status(message, code, details as never);

/** The gRPC spelling of a code: `NOT_FOUND`, `CANCELLED`. */
export function grpcCodeName(code: Code): string {
  if (code === Code.Canceled) return 'CANCELLED';
  return Code[code].replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase();
}

function hasErrorInfo(err: ConnectError): boolean {
  return err.details.some((d) => ('desc' in d ? d.desc.typeName : d.type) === ErrorInfoSchema.typeName);
}

/** Told of a server fault on its way out that no interceptor saw (http2-handler.ts logs it). */
export type OnFault = (err: ConnectError) => void;

/**
 * The error to send for one Connect raised: with an ErrorInfo whose reason says what was wrong.
 * A request body the decoder rejects is the client's mistake, INVALID_ARGUMENT, not INTERNAL:
 * MALFORMED_REQUEST, with a BadRequest naming the field when `method` (the one called) is known
 * and the decoder names one. A server fault (INTERNAL, UNKNOWN, DATA_LOSS) is answered with reason
 * INTERNAL and no internals, and reported to `onFault`.
 */
export function withErrorInfo(err: ConnectError, method?: DescMethod, onFault?: OnFault): ConnectError {
  if (hasErrorInfo(err)) return err;
  const decoded = method && decodeErrorStatus(err, method);
  if (decoded) return decoded;
  if (isServerFault(err.code)) {
    // Connect's own text (an encoder's, a stack's) stays in the log (server-faults.ts).
    onFault?.(err);
    return errorWith(INTERNAL_MESSAGE, err.code, [info('INTERNAL')]);
  }
  const m = err.rawMessage;
  const again = (message: string, code: Code, details: Detail[]): ConnectError => errorWith(message, code, [...err.details, ...details]);
  if (/^(parse binary|protocol error: (incomplete envelope|promised|missing input|received extra))|^cannot decode|JSON/i.test(m) && err.code !== Code.ResourceExhausted) {
    return again(`malformed request message: ${m}`, Code.InvalidArgument, [info('MALFORMED_REQUEST')]);
  }
  if (/invalid (grpc|connect) timeout value/.test(m)) return again(m, Code.InvalidArgument, [info('INVALID_DEADLINE')]);
  if (/^unknown compression/.test(m)) return again(m, err.code, [info('UNSUPPORTED_COMPRESSION')]);
  if (err.code === Code.ResourceExhausted && /readMaxBytes/.test(m)) {
    // FlowService reads at most WAYMARK_MAX_FLOW_BYTES (flow-service.ts): a flow is refused before it is decoded.
    const limit = method?.parent.typeName === 'waymark.v1.FlowService' ? 'WAYMARK_MAX_FLOW_BYTES' : 'WAYMARK_MAX_REQUEST_BYTES';
    return again(m, err.code, [
      info('REQUEST_TOO_LARGE', { limit }),
      { desc: QuotaFailureSchema, value: { violations: [{ subject: 'request', description: `${m} (${limit})` }] } },
    ]);
  }
  if (err.code === Code.DeadlineExceeded) return again(m, err.code, [info('DEADLINE_EXCEEDED')]);
  return again(m, err.code, [info(grpcCodeName(err.code))]);
}

/** The response for a request Connect did not route: unknown path, or a content type or method it does not serve. */
export function unroutedResponse(
  request: { contentType: string; path: string }, status: 404 | 405 | 415,
): UniversalServerResponse {
  const reason = status === 404 ? 'UNKNOWN_METHOD' : status === 405 ? 'METHOD_NOT_ALLOWED' : 'UNSUPPORTED_MEDIA_TYPE';
  const message = status === 404
    ? `${request.path} is not a method of this server; server reflection lists the services`
    : status === 405 ? `${request.path} is served with POST (GET only for Connect methods without side effects)`
    : `content type "${request.contentType}" is not served; use application/grpc, application/grpc-web or Connect (application/json, application/proto)`;
  const error = errorWith(message, Code.Unimplemented, [info(reason, { path: request.path })]);
  if (/^application\/grpc/.test(request.contentType)) {
    // gRPC answers over HTTP 200 with the status in the trailers (gRPC-Web: in the body).
    if (request.contentType.startsWith('application/grpc-web')) {
      const trailer = trailerSerialize(setTrailerStatus(new Headers(), error));
      return { status: 200, header: new Headers({ 'content-type': 'application/grpc-web+proto' }), body: once(encodeEnvelope(trailerFlag, trailer)) };
    }
    return { status: 200, header: new Headers({ 'content-type': 'application/grpc' }), trailer: setTrailerStatus(new Headers(), error) };
  }
  const body = errorToJsonBytes(error, {});
  return { status, header: new Headers({ 'content-type': 'application/json', 'content-length': String(body.byteLength) }), body: once(body) };
}

/** `uRes`, the answer of `method`, with an ErrorInfo added to whatever error it carries, in its protocol's format. */
export function ensureErrorInfo(uRes: UniversalServerResponse, method?: DescMethod, onFault?: OnFault): UniversalServerResponse {
  if (uRes.status === 404 || uRes.status === 405 || uRes.status === 415) return uRes; // handled by unroutedResponse
  const type = uRes.header?.get('content-type') ?? '';
  const body = uRes.body as AsyncIterable<Uint8Array> | undefined;
  if (!body || uRes.header?.has('content-encoding')) return uRes;
  if (/^application\/grpc-web/.test(type)) return { ...uRes, body: mapChunks(body, (c) => (c[0]! & 0x81) === trailerFlag ? grpcWebTrailer(c, method, onFault) : c) };
  if (/^application\/grpc/.test(type)) {
    const trailer = uRes.trailer;
    return { ...uRes, body: afterLast(body, () => trailer && amendTrailer(trailer, method, onFault)) };
  }
  if (/^application\/connect\+/.test(type)) return { ...uRes, body: mapChunks(body, (c) => (c[0]! & 0x03) === endStreamFlag ? connectEndStream(c, method, onFault) : c) };
  if (uRes.status !== 200 && /^application\/json/.test(type)) {
    // The status line goes out after the first chunk (http2-handler.ts), so the amended code can still set it.
    const out: UniversalServerResponse = { ...uRes, body: mapChunks(body, (c) => connectErrorBody(c, out, method, onFault)) };
    return out;
  }
  return uRes;
}

function amendTrailer(trailer: Headers, method: DescMethod | undefined, onFault: OnFault | undefined): Headers {
  const err = findTrailerError(trailer);
  if (!err || hasErrorInfo(err)) return trailer;
  const amended = withErrorInfo(errorWith(err.rawMessage, err.code, err.details), method, onFault);
  return setTrailerStatus(trailer, amended);
}

function grpcWebTrailer(chunk: Uint8Array, method: DescMethod | undefined, onFault: OnFault | undefined): Uint8Array {
  const trailer = trailerParse(chunk.subarray(5));
  return encodeEnvelope(trailerFlag, trailerSerialize(amendTrailer(trailer, method, onFault)));
}

const endStream = createEndStreamSerialization({});

function connectEndStream(chunk: Uint8Array, method: DescMethod | undefined, onFault: OnFault | undefined): Uint8Array {
  const end = endStream.parse(chunk.subarray(5));
  if (!end.error || hasErrorInfo(end.error)) return chunk;
  const error = withErrorInfo(errorWith(end.error.rawMessage, end.error.code, end.error.details), method, onFault);
  return encodeEnvelope(endStreamFlag, endStream.serialize({ metadata: end.metadata, error }));
}

function connectErrorBody(chunk: Uint8Array, res: UniversalServerResponse, method: DescMethod | undefined, onFault: OnFault | undefined): Uint8Array {
  const err = errorFromJsonBytes(chunk, undefined, new ConnectError('', Code.Unknown));
  if (hasErrorInfo(err)) return chunk;
  const amended = withErrorInfo(errorWith(err.rawMessage, err.code, err.details), method, onFault);
  const bytes = errorToJsonBytes(amended, {});
  res.header!.set('content-length', String(bytes.byteLength));
  res.status = codeToHttpStatus(amended.code);
  return bytes;
}

async function* once(chunk: Uint8Array): AsyncIterable<Uint8Array> {
  yield chunk;
}

async function* mapChunks(body: AsyncIterable<Uint8Array>, map: (chunk: Uint8Array) => Uint8Array): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield map(chunk);
}

async function* afterLast(body: AsyncIterable<Uint8Array>, then: () => void): AsyncIterable<Uint8Array> {
  yield* body;
  then();
}
