import { ClientCertificateTakenError, RunNotFoundError, StoreUnavailableError, WaymarkError } from '../../journal/errors.js';
import { duplicateDedupeKey } from '../store-errors.js';

/*
 * The one place pg and network errors become domain errors (STYLE habit 4; River's interpretError).
 * Outcomes the store expects, such as a zero-row fence or an idempotency conflict, are handled
 * where they happen and never reach here; what does reach here is either "try again later"
 * (StoreUnavailableError) or a bug, which is rethrown untouched so its SQLSTATE stays visible.
 */

/** Network-level failures: the server is unreachable or the connection died under us. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'EAI_AGAIN']);

/**
 * SQLSTATEs after which the same call may succeed later:
 * 08xxx connection exceptions, 53xxx insufficient resources (too many connections, out of memory),
 * 57P01-57P05 shutdown / cannot connect now / idle-session timeouts, 57014 statement_timeout,
 * 55P03 lock_timeout (the sweeper skips and retries next tick), 40001/40P01 serialization failure
 * and deadlock (retry the whole call), 25P03 idle-in-transaction timeout. And 55000
 * (object_not_in_prerequisite_state) when a new session is refused because the database does not
 * accept connections (ALTER DATABASE … ALLOW_CONNECTIONS false, as for maintenance): PostgreSQL
 * raises it while starting the session (routine InitPostgres). Elsewhere 55000 is a bug (currval
 * before nextval, say) and stays one.
 */
function retryableSqlState(code: string, err: Error): boolean {
  if (code === '55000') return (err as { routine?: unknown }).routine === 'InitPostgres' || /not currently accepting connections/.test(err.message);
  return code.startsWith('08') || code.startsWith('53') || /^57P0[1-5]$/.test(code) ||
    ['57014', '55P03', '40001', '40P01', '25P03'].includes(code);
}

/** node-postgres reports pool and connection trouble with messages, not codes. */
const CONNECTION_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'connection timeout',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

/** The SQLSTATE of a pg error, or undefined. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The constraint a unique or foreign-key violation names, or undefined. */
export function violatedConstraint(err: unknown): string | undefined {
  const constraint = (err as { constraint?: unknown } | null)?.constraint;
  return typeof constraint === 'string' ? constraint : undefined;
}

export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  const state = sqlState(err);
  if (state !== undefined) return retryableSqlState(state, err);
  return CONNECTION_MESSAGES.some((m) => err.message.includes(m));
}

/** What the failing call was about, so a constraint violation can name it. */
export interface ErrorContext {
  runId?: string;
  parentRunId?: string | null;
  /** An API key's client certificate being bound (apiKeyCreate). */
  clientCertSha256?: string | null;
}

/**
 * Domain errors pass through; constraint violations the schema uses as rules become their domain
 * error; "unavailable" failures become StoreUnavailableError (with the original as `cause`);
 * anything else is returned unchanged, for the caller to throw.
 */
export function translatePgError(err: unknown, context: ErrorContext = {}): unknown {
  if (err instanceof WaymarkError) return err;
  const state = sqlState(err);
  const constraint = violatedConstraint(err);
  if (state === '23503' && constraint === 'runs_parent_run_id_fkey' && context.parentRunId) {
    return new RunNotFoundError(context.parentRunId);
  }
  if (state === '23505' && constraint === 'journal_dedupe_key' && context.runId) {
    // detail: Key (run_id, dedupe_key)=(<uuid>, <key>) already exists.
    const detail = String((err as { detail?: unknown }).detail ?? '');
    const key = /=\([0-9a-f-]+, (.*)\) already exists/.exec(detail)?.[1] ?? '?';
    return duplicateDedupeKey(context.runId, key);
  }
  if (state === '23505' && constraint === 'api_keys_client_cert' && context.clientCertSha256) {
    return new ClientCertificateTakenError(context.clientCertSha256);
  }
  if (isUnavailable(err)) {
    const e = err as Error;
    return new StoreUnavailableError(state ? `${e.message} (SQLSTATE ${state})` : e.message, { cause: e });
  }
  return err;
}
