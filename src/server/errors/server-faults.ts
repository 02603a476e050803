import { Code, createContextKey } from '@connectrpc/connect';
import type { Logger } from 'pino';

/*
 * Server faults: errors that mean "the server is broken", not "the caller asked for something it
 * cannot have" (INTERNAL, UNKNOWN, DATA_LOSS). Each is logged once, at error level, with its cause
 * chain (class, message, stack and code of every error in it) and what the call was about (the
 * RPC, the namespace, run id, approval id, workflow), and never with the request's payload: the
 * request message is not logged, nor the properties an error carries besides its code (a
 * PostgreSQL error's `detail` and `where` quote the values of the failing row). The client gets
 * the code with reason INTERNAL and a message that says the server logged the details.
 *
 * Three places meet faults, and one log line comes out of them (test/server/internal-errors.test.ts):
 * - the logging interceptor, for everything a handler or an interceptor throws (withErrorMapping
 *   turns an unknown error into error-mapping.ts `internalError`, carrying it as `cause`);
 * - the same interceptor, for a fault Connect meets after the handler returned (encoding the
 *   response): Connect aborts the call's signal with it;
 * - the HTTP/2 handler, for a fault that reached the wire without either seeing it.
 */

export const INTERNAL_MESSAGE = 'internal error; the server logged the details';

const SERVER_FAULTS: ReadonlySet<Code> = new Set([Code.Internal, Code.Unknown, Code.DataLoss]);

export function isServerFault(code: Code): boolean {
  return SERVER_FAULTS.has(code);
}

/** Per request: whether its fault was logged already (set by the HTTP/2 handler; absent in process). */
export const faultRecordKey = createContextKey<{ logged: boolean } | undefined>(undefined, { description: 'waymark fault logged' });

/** Errors built by internalError (error-mapping.ts): already answered, their cause logged or about to be. */
const answered = new WeakSet<Error>();

/** Records that `err` is the answer to a fault, not a new one. */
export function markAnswered<E extends Error>(err: E): E {
  answered.add(err);
  return err;
}

/** Whether `err` is the answer internalError built (its fault is not a new one). */
export function isAnswered(err: unknown): boolean {
  return err instanceof Error && answered.has(err);
}

/** The error a fault is about: the cause an answer carries, or the error itself. */
export function faultOf(err: unknown): unknown {
  return isAnswered(err) ? (err as Error).cause : err;
}

interface FaultLink {
  type: string;
  message: string;
  stack?: string;
  code?: string;
}

/** How a fault is logged: each error of the cause chain, with only its class, message, stack and code. */
export function faultFields(err: unknown): { type: string; message: string; stack?: string; causes?: FaultLink[] } {
  const links: FaultLink[] = [];
  const seen = new Set<unknown>();
  for (let e: unknown = err; e !== undefined && e !== null && !seen.has(e) && links.length < 8; e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    if (!(e instanceof Error)) {
      links.push({ type: typeof e, message: String(e) });
      break;
    }
    const code = (e as { code?: unknown }).code;
    links.push({
      type: e.constructor.name, message: e.message, ...(e.stack ? { stack: e.stack } : {}),
      ...(typeof code === 'string' || typeof code === 'number' ? { code: String(code) } : {}),
    });
  }
  const [first, ...causes] = links;
  return { ...(first ?? { type: 'undefined', message: 'undefined' }), ...(causes.length ? { causes } : {}) };
}

/** Logs a fault once per request (`record` says whether it was), with `fields` about the call. */
export function logFault(logger: Logger, fields: Record<string, unknown>, err: unknown, record: { logged: boolean } | undefined): void {
  if (record?.logged) return;
  if (record) record.logged = true;
  logger.error({ ...fields, fault: faultFields(faultOf(err)) }, 'rpc failed');
}
