import { createHash } from 'node:crypto';
import { ConnectError, type Interceptor } from '@connectrpc/connect';
import { context, propagation, SpanKind, SpanStatusCode, trace, TraceFlags, type Span } from '@opentelemetry/api';
import { grpcCodeName } from '../errors/framework-errors.js';

/**
 * One span per RPC (docs/tracing.md), server streams included: a stream's span ends when its last
 * message is sent or it fails. It continues the caller's W3C `traceparent` when the request has
 * one. Attributes name the call (rpc.system/service/method, the gRPC status), never what it
 * carried, but for the run a unary call answers about: its id as `waymark.run_id` and a link to the
 * run's own trace (whose id is the run id), so a StartRun in the caller's trace leads to the run's.
 * Installed only when tracing is on (cli/tracing.ts), first, so every other interceptor
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
          linkRun(span, res.message);
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

/** The run a response carries (`run.id`: StartRun, GetRun, ResumeRun, ForkRun…): attribute and link to its trace. */
function linkRun(span: Span, message: unknown): void {
  const run = (message as { run?: { id?: unknown } } | null)?.run;
  if (typeof run?.id !== 'string' || !/^[0-9a-f-]{36}$/i.test(run.id)) return;
  span.setAttribute('waymark.run_id', run.id);
  // The run's trace and root span, as cli/execution-tracing.ts derives them (docs/tracing.md).
  const spanId = createHash('sha256').update(run.id).digest('hex').slice(0, 16);
  span.addLink({ context: { traceId: run.id.replaceAll('-', '').toLowerCase(), spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true } });
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
