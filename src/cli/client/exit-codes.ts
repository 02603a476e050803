import { Code, Unavailable, WaymarkError, toWaymarkError } from '@waymark-dev/client';
import { withCommandNames } from './rpc-commands.js';
import { UsageError } from './usage-error.js';

/*
 * The exit statuses of the operator commands (docs/cli.md "Exit codes"), which scripts rely on,
 * and the one line of text each failure prints. Server errors arrive typed from the client
 * package; a status is chosen by the gRPC code alone, so a new reason keeps its class.
 */

export const EXIT = {
  ok: 0,
  /** Anything not below: a server fault (INTERNAL, UNKNOWN), an unexpected error. */
  error: 1,
  /** The command line or the data it names: a flag, a JSON value, an input the schema refuses. */
  invalidInput: 2,
  /** The run, workflow or approval does not exist in this namespace. */
  notFound: 3,
  /** The target is in the wrong state: finished, already decided, drifted, a reused key. */
  wrongState: 4,
  /** The server could not be reached or did not answer in time; worth retrying later. */
  unavailable: 5,
  /** The credentials or TLS did not pass: UNAUTHENTICATED, PERMISSION_DENIED, a certificate refused or untrusted. */
  denied: 6,
  /** `--wait`: the run ended FAILED or CANCELLED. */
  runFailed: 7,
  /** Ctrl-C stopped the command (128 + SIGINT); the run was not touched. */
  interrupted: 130,
} as const;

/** Invalid input found before anything was sent (exit 2); the message says what to fix. */
export { UsageError };

/** Ctrl-C: the abort reason of a command's signal. */
export class Interrupted extends Error {
  constructor() {
    super('interrupted');
  }
}

export function exitCodeOf(err: unknown): number {
  if (err instanceof UsageError) return EXIT.invalidInput;
  if (err instanceof Interrupted) return EXIT.interrupted;
  if (tlsFailure(err) !== undefined) return EXIT.denied;
  const typed = toTyped(err);
  if (!typed) return EXIT.error;
  switch (typed.code) {
    case Code.InvalidArgument:
    case Code.OutOfRange:
      return EXIT.invalidInput;
    case Code.ResourceExhausted:
      // Over a limit (PayloadTooLarge) is the caller's input; a rate limit is retryable.
      return typed.retryDelayMs === undefined ? EXIT.invalidInput : EXIT.unavailable;
    case Code.NotFound:
      return EXIT.notFound;
    case Code.FailedPrecondition:
    case Code.AlreadyExists:
    case Code.Aborted:
      return EXIT.wrongState;
    case Code.Unavailable:
    case Code.DeadlineExceeded:
      return EXIT.unavailable;
    case Code.Unauthenticated:
    case Code.PermissionDenied:
      return EXIT.denied;
    default:
      return EXIT.error;
  }
}

/** The one line a failure prints (without the "waymark <command>:" prefix); `tls`: whether TLS was used. */
export function errorMessage(err: unknown, address: string, tls = false): string {
  if (err instanceof UsageError) return err.message;
  const handshake = tlsFailure(err);
  if (handshake !== undefined) return `TLS with the server at ${address} failed: ${handshake}; check --ca, --cert and --key (and --server-name)`;
  const typed = toTyped(err);
  if (!typed) return err instanceof Error ? err.message : String(err);
  if (typed instanceof Unavailable && typed.kind !== 'status') {
    const hint = tls ? '' : ' (one serving TLS needs --tls or --ca FILE)';
    return `cannot reach the server at ${address} (${typed.message.replace(/^could not reach the server: /, '')}); is it running${hint}? Point --addr or WAYMARK_ADDR at it`;
  }
  if (typed.code === Code.DeadlineExceeded) {
    const hint = tls ? '' : '; one serving TLS needs --tls or --ca FILE';
    return `the server at ${address} did not answer in time (${typed.message}); retry, or raise --timeout${hint}`;
  }
  if (typed.code === Code.Unauthenticated || typed.code === Code.PermissionDenied) {
    return `the server refused the credentials: ${withCommandNames(typed.message)}; check --token or WAYMARK_TOKEN${typed.reason === 'CERTIFICATE_NOT_BOUND' ? ', or --cert' : ''}`;
  }
  return withCommandNames(oneLine(typed.message));
}

/**
 * The reason of a TLS handshake failure anywhere in the cause chain (an untrusted or mismatched
 * server certificate, a client certificate the server refused), which no retry can fix; undefined
 * for anything else. connect-node passes Node's and OpenSSL's errors through as the cause or text.
 */
function tlsFailure(err: unknown): string | undefined {
  // An answer with an ErrorInfo came from the server, past any handshake (its text may say "certificate").
  if (toTyped(err)?.reason) return undefined;
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    const text = e.message;
    const alert = /ssl3_read_bytes:([^:]+):/.exec(text)?.[1] ?? /(tlsv1\d? alert [a-z ]+)/.exec(text)?.[1];
    if (alert) return alert;
    if ((typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code)) || /certificate/i.test(text)) {
      return text.replace(/^.*?: /, '') || text;
    }
  }
  return undefined;
}

function toTyped(err: unknown): WaymarkError | undefined {
  if (err instanceof WaymarkError) return err;
  if (err instanceof Error && err.name === 'ConnectError') return toWaymarkError(err);
  return undefined;
}

function oneLine(s: string): string {
  return s.replace(/\s*\n\s*/g, '; ');
}
