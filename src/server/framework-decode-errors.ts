import type { DescMethod } from '@bufbuild/protobuf';
import { ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { createAsyncIterable, type UniversalHandler, type UniversalServerResponse } from '@connectrpc/connect/protocol';
import { codeToHttpStatus, errorFromJsonBytes, errorToJsonBytes } from '@connectrpc/connect/protocol-connect';
import { findTrailerError, setTrailerStatus } from '@connectrpc/connect/protocol-grpc';

/*
 * Errors Connect raises itself, around a handler rather than in it (a request body that does not
 * decode, for one), never pass through withErrorMapping. This puts them through the same mapping
 * (error-mapping.ts frameworkStatus) on their way out: each method's universal handler is wrapped
 * so the status it answers, in the gRPC trailers or the Connect unary error body, is rewritten
 * when the mapping says so. Statuses our handlers raised carry an ErrorInfo and pass unchanged.
 * gRPC-Web and Connect streaming bodies are left as Connect writes them (no client of ours uses them).
 */

export type FrameworkErrorMap = (err: ConnectError, method: DescMethod) => ConnectError;

/** Wraps every handler registered on `router` so framework errors leave through `map`. Call after the routes are registered. */
export function mapFrameworkErrors(router: ConnectRouter, map: FrameworkErrorMap): void {
  const handlers = router.handlers;
  for (let i = 0; i < handlers.length; i++) {
    const inner = handlers[i]!;
    const wrapped = (async (req) => rewrite(await inner(req), inner.method, map)) as UniversalHandler;
    handlers[i] = Object.assign(wrapped, inner);
  }
}

async function rewrite(res: UniversalServerResponse, method: DescMethod, map: FrameworkErrorMap): Promise<UniversalServerResponse> {
  const type = res.header?.get('content-type') ?? '';
  if (type.startsWith('application/grpc') && !type.startsWith('application/grpc-web') && res.body) {
    return { ...res, body: rewriteTrailer(res.body, res.trailer, method, map) };
  }
  if (res.status !== 200 && type === 'application/json' && !res.header?.has('content-encoding') && res.body) {
    return rewriteConnectError(res, method, map);
  }
  return res;
}

/** gRPC: the status is in the trailers, which Connect fills in once the body has ended. */
async function* rewriteTrailer(body: AsyncIterable<Uint8Array>, trailer: Headers | undefined, method: DescMethod, map: FrameworkErrorMap): AsyncIterable<Uint8Array> {
  yield* body;
  if (!trailer) return;
  const err = findTrailerError(trailer);
  if (!err) return;
  const mapped = map(err, method);
  if (mapped !== err) setTrailerStatus(trailer, mapped);
}

/** Connect unary: the error is the whole JSON body, computed before the handler returns. */
async function rewriteConnectError(res: UniversalServerResponse, method: DescMethod, map: FrameworkErrorMap): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of res.body!) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  const unchanged = { ...res, body: createAsyncIterable([bytes]) };
  let err: ConnectError;
  try {
    err = errorFromJsonBytes(bytes, undefined, new ConnectError('unparsable error body'));
  } catch {
    return unchanged;
  }
  const mapped = map(err, method);
  if (mapped === err) return unchanged;
  const out = errorToJsonBytes(mapped, {});
  const header = new Headers(res.header);
  header.set('content-length', String(out.byteLength));
  return { ...res, status: codeToHttpStatus(mapped.code), header, body: createAsyncIterable([out]) };
}
