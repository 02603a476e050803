import { Code, ConnectError, type Interceptor } from '@connectrpc/connect';
import type { Logger } from 'pino';
import { grpcCodeName } from './framework-errors.js';
import { decodeErrorStatus } from './error-mapping.js';

/**
 * Codes that mean "the server is broken", not "the caller asked for something it cannot have".
 * Only these page someone, and only these get their message replaced before it reaches the client,
 * because their text usually comes from a driver or a stack we did not write for users.
 */
const SERVER_FAULTS: ReadonlySet<Code> = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);

/**
 * One log line per failed RPC: `error` (with the cause) for server faults, `info` otherwise.
 * Client-facing errors are translated from domain errors before they get here; anything that is
 * not a ConnectError is a bug, so it becomes INTERNAL with a generic message, and the details stay
 * in the log. Successful calls are not logged: metrics count them.
 *
 * Server streams fail while being iterated, after `next()` resolved, so the response stream is
 * wrapped to see errors thrown mid-stream.
 */
export function loggingInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    const started = performance.now();
    const rpc = `/${req.service.typeName}/${req.method.name}`;
    const fail = (err: unknown): ConnectError => {
      const durationMs = Math.round(performance.now() - started);
      // A bare Error becomes INTERNAL; an AbortError (the client went away) becomes CANCELLED; a
      // server stream's request that does not decode (decoded in here) is the client's INVALID_ARGUMENT.
      const caught = ConnectError.from(err, Code.Internal);
      const error = decodeErrorStatus(caught, req.method) ?? caught;
      const code = error.code;
      const fields = { rpc, code: grpcCodeName(code), durationMs };
      if (!SERVER_FAULTS.has(code)) {
        logger.info({ ...fields, reason: error.rawMessage }, 'rpc failed');
        return error;
      }
      logger.error({ ...fields, err }, 'rpc failed');
      return new ConnectError('internal error; the server logged the details', code);
    };
    try {
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: watchStream(res.message, fail) };
    } catch (err) {
      throw fail(err);
    }
  };
}

async function* watchStream<T>(messages: AsyncIterable<T>, fail: (err: unknown) => ConnectError): AsyncIterable<T> {
  try {
    yield* messages;
  } catch (err) {
    throw fail(err);
  }
}
