import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { grpcCodeName } from '../errors/framework-errors.js';
import { boundedText, decodeErrorStatus, internalError } from '../errors/error-mapping.js';
import { faultRecordKey, isAnswered, isServerFault, logFault } from '../errors/server-faults.js';

/**
 * One log line per failed RPC: `error` (with the cause chain, server-faults.ts) for server faults,
 * `info` otherwise. Client-facing errors are translated from domain errors before they get here;
 * anything that is not a ConnectError is a bug, so it becomes INTERNAL with a generic message and
 * reason INTERNAL, and the details stay in the log. Successful calls are not logged: metrics count
 * them. Each line says what the call was about (namespace, run id, approval id, workflow, read from
 * the request), never what it carried (inputs, payloads, comments).
 *
 * Server streams fail while being iterated, after `next()` resolved, so the response stream is
 * wrapped to see errors thrown mid-stream; their request is read as the handler reads it. A fault
 * Connect meets after the interceptors (encoding the response) aborts the call's signal with it,
 * which is where this sees it.
 */
export function loggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const rpc = `/${req.service.typeName}/${req.method.name}`;
    const record = req.contextValues.get(faultRecordKey);
    let about: Record<string, string> = {};
    const fields = (code: Code) => ({ rpc, code: grpcCodeName(code), durationMs: Math.round(performance.now() - started), ...about });
    const fail = (err: unknown): ConnectError => {
      // A bare Error becomes INTERNAL; an AbortError (the client went away) becomes CANCELLED; a
      // server stream's request that does not decode (decoded in here) is the client's INVALID_ARGUMENT.
      const caught = ConnectError.from(err, Code.Internal);
      const error = decodeErrorStatus(caught, req.method) ?? caught;
      if (!isServerFault(error.code)) {
        logger.info({ ...fields(error.code), reason: error.rawMessage }, 'rpc failed');
        return error;
      }
      logFault(logger, fields(error.code), err, record);
      return isAnswered(error) ? error : internalError(err, error.code);
    };
    req.signal.addEventListener('abort', () => {
      const reason: unknown = req.signal.reason;
      if (reason instanceof ConnectError && isServerFault(reason.code) && !isAnswered(reason)) logFault(logger, fields(reason.code), reason, record);
    }, { once: true });
    try {
      if (req.stream) req = { ...req, message: readAbout(req.message, (m) => (about = aboutOf(m))) };
      else about = aboutOf(req.message);
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: watchStream(res.message, fail) };
    } catch (err) {
      throw fail(err);
    }
  };
}

/** Request fields that name what a call is about, and their names in the log. Never payloads. */
const ABOUT: [string, string][] = [['namespace', 'namespace'], ['runId', 'run_id'], ['id', 'approval_id'], ['workflow', 'workflow']];

function aboutOf(message: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [field, name] of ABOUT) {
    const value = (message as Record<string, unknown> | null)?.[field];
    if (typeof value === 'string' && value !== '') out[name] = boundedText(value, 128);
  }
  return out;
}

async function* readAbout<T>(messages: AsyncIterable<T>, first: (message: T) => void): AsyncIterable<T> {
  let seen = false;
  for await (const message of messages) {
    if (!seen) first(message);
    seen = true;
    yield message;
  }
}

async function* watchStream<T>(messages: AsyncIterable<T>, fail: (err: unknown) => ConnectError): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw fail(err);
  }
}
