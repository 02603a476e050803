import type { IncomingHttpHeaders } from 'node:http2';

/**
 * The longest deadline a call gets: Node's timers hold at most 2^31-1 ms (24.8 days). A longer
 * one overflowed: Node printed a TimeoutOverflowWarning and fired the timer after 1 ms, so a
 * `grpc-timeout` of "99999999H" failed at once with DEADLINE_EXCEEDED (issue 16, finding 7).
 * A deadline that far away is a valid header meaning "no practical limit", so it is clamped, as
 * gRPC servers do, rather than refused.
 */
export const MAX_DEADLINE_MS = 2 ** 31 - 1;

const GRPC_UNIT_MS: Record<string, number> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 0.001, n: 0.000_001 };

/**
 * Rewrites `grpc-timeout` (gRPC, gRPC-Web) and `connect-timeout-ms` (Connect) in place when they
 * ask for more than MAX_DEADLINE_MS, before Connect reads them. Malformed values are left for
 * Connect to refuse with INVALID_ARGUMENT.
 */
export function clampTimeoutHeaders(headers: IncomingHttpHeaders): void {
  const grpc = headers['grpc-timeout'];
  if (typeof grpc === 'string') {
    const m = /^(\d{1,8})([HMSmun])$/.exec(grpc);
    // Whole seconds below the cap: the header allows at most 8 digits, too few for it in ms.
    if (m && Number(m[1]) * GRPC_UNIT_MS[m[2]!]! > MAX_DEADLINE_MS) headers['grpc-timeout'] = `${Math.floor(MAX_DEADLINE_MS / 1000)}S`;
  }
  const connect = headers['connect-timeout-ms'];
  if (typeof connect === 'string' && /^\d{1,10}$/.test(connect) && Number(connect) > MAX_DEADLINE_MS) {
    headers['connect-timeout-ms'] = String(MAX_DEADLINE_MS);
  }
}
