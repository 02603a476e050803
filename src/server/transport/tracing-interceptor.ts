import { ConnectError, type Interceptor } from '@connectrpc/connect';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { grpcCodeName } from '../errors/framework-errors.js';

/**
 * One span per RPC (docs/tracing.md), server streams included: a stream's span ends when its last
 * message is sent or it fails. It continues the caller's W3C `traceparent` when the request has
 * one. Attributes name the call (rpc.system/service/method, the gRPC status), never what it
 * carried. Installed only when tracing is on (cli/tracing.ts), first, so every other interceptor
 * and the handler run inside the span.
 */
export function tracingInterceptor(): Interceptor {
  const tracer = trace.getTracer('waymark.rpc');
  return (next) => async (req) => {
    const carrier: Record<string, string> = {};
    req.header.forEach((value, key) => { carrier[key] = value; });
    const parent = propagation.extract(context.active(), carrier);
    const span = tracer.startSpan(`${req.service.typeName}/${req.method.name}`, {
      kind: SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': req.service.typeName, 'rpc.method': req.method.name },
    }, parent);
    return context.with(trace.setSpan(parent, span), async () => {
      try {
        const res = await next(req);
        if (!res.stream) {
          end(span, null);
          return res;
        }
        return { ...res, message: endWithStream(span, res.message) };
      } catch (err) {
        end(span, err);
        throw err;
      }
    });
  };
}

async function* endWithStream<T>(span: Span, messages: AsyncIterable<T>): AsyncIterable<T> {
  let failure: unknown = null;
  try {
    yield* messages;
  } catch (err) {
    failure = err;
    throw err;
  } finally {
    end(span, failure);
  }
}

function end(span: Span, err: unknown): void {
  if (err === null) {
    span.setAttribute('rpc.grpc.status_code', 0);
  } else {
    const error = ConnectError.from(err);
    span.setAttribute('rpc.grpc.status_code', error.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: grpcCodeName(error.code) });
  }
  span.end();
}
