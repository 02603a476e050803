import { Code, ConnectError } from '@connectrpc/connect';
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from './gen/google/rpc/error_details_pb.js';

/** One invalid field of a request (google.rpc.BadRequest). */
export interface FieldViolation {
  field: string;
  description: string;
}

/** What a WaymarkError carries besides its code and message. */
export interface ErrorDetails {
  reason?: string | undefined;
  domain?: string | undefined;
  metadata?: Record<string, string> | undefined;
  fieldViolations?: FieldViolation[] | undefined;
  retryDelayMs?: number | undefined;
}

/**
 * A failed call: the gRPC code and message plus the google.rpc details the server sent
 * (ErrorInfo reason and metadata, BadRequest field violations, RetryInfo). Every method of the
 * client throws the subclass its reason names; `cause` is the original ConnectError.
 */
export class WaymarkError extends Error {
  /** google.rpc.ErrorInfo reason, e.g. RUN_NOT_FOUND; empty when the server sent none. */
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly fieldViolations: readonly FieldViolation[];
  /** From google.rpc.RetryInfo; undefined when the server did not ask for a delay. */
  readonly retryDelayMs: number | undefined;

  constructor(
    readonly code: Code,
    message: string,
    details: ErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.reason = details.reason ?? '';
    this.domain = details.domain ?? '';
    this.metadata = details.metadata ?? {};
    this.fieldViolations = details.fieldViolations ?? [];
    this.retryDelayMs = details.retryDelayMs;
  }

  override get name(): string {
    return this.constructor.name;
  }

  /**
   * True when the same call may succeed later: the server is unavailable, the connection failed,
   * or the server asked to back off (RetryInfo). docs/clients.md says which calls the client
   * retries by itself.
   */
  get retryable(): boolean {
    return this.code === Code.Unavailable || (this.code === Code.ResourceExhausted && this.retryDelayMs !== undefined);
  }

  protected meta(...keys: string[]): string {
    for (const key of keys) if (key in this.metadata) return this.metadata[key] ?? '';
    return '';
  }
}

/** The run id is unknown in this namespace (NOT_FOUND). */
export class RunNotFound extends WaymarkError {
  get runId(): string {
    return this.meta('run_id');
  }
}

/** No workflow of that name is registered on the server (NOT_FOUND). */
export class WorkflowNotFound extends WaymarkError {
  get workflow(): string {
    return this.meta('workflow');
  }
}

/** The approval id is unknown (NOT_FOUND). */
export class ApprovalNotFound extends WaymarkError {
  get approvalId(): string {
    return this.meta('approval_id');
  }
}

/** The schedule id is unknown in this namespace (NOT_FOUND). */
export class ScheduleNotFound extends WaymarkError {
  get scheduleId(): string {
    return this.meta('schedule_id');
  }
}

/** CreateSchedule with an id the namespace already has (ALREADY_EXISTS). */
export class ScheduleExists extends WaymarkError {
  get scheduleId(): string {
    return this.meta('schedule_id');
  }
}

/** The run pinned another definition of its workflow and the drift policy is strict (FAILED_PRECONDITION). */
export class FlowDrift extends WaymarkError {
  get runId(): string {
    return this.meta('run_id');
  }
  /** The recoveries the server offers, e.g. ["restart", "abandon"]. */
  get choices(): string[] {
    return this.meta('choices').split(',').map((c) => c.trim()).filter(Boolean);
  }
  get pinnedDigest(): string {
    return this.meta('pinned_digest');
  }
  get currentDigest(): string {
    return this.meta('current_digest');
  }
}

/** A payload or the request is over a server limit (RESOURCE_EXHAUSTED). */
export class PayloadTooLarge extends WaymarkError {
  get field(): string {
    return this.meta('field');
  }
  get sizeBytes(): number | undefined {
    return toNumber(this.meta('size_bytes'));
  }
  get limitBytes(): number | undefined {
    return toNumber(this.meta('limit_bytes'));
  }
}

/** The request failed validation (INVALID_ARGUMENT); `fieldViolations` says where. */
export class InvalidArgument extends WaymarkError {}

/**
 * The approval or signal wait was already resolved by another decision, signal, timeout or
 * cancellation. The server answers such a call successfully with `applied` false and reason
 * "already_resolved"; `approve`, `deny` and `sendSignal` throw this for it (and for a repeat of
 * a request id or signal id whose first delivery lost). `response` is the server's answer.
 */
export class AlreadyResolved extends WaymarkError {
  response: unknown;
}

/**
 * A remote tool's task is no longer held by this worker (ABORTED, reason TASK_LOST): it was
 * dispatched to another worker, or the call was closed. Its result was refused; stop working on it.
 */
export class TaskLost extends WaymarkError {
  get taskId(): string {
    return this.meta('task_id');
  }
}

/** The worker is not registered in this namespace (NOT_FOUND, reason WORKER_NOT_FOUND): register again. */
export class WorkerNotFound extends WaymarkError {
  get workerId(): string {
    return this.meta('worker_id');
  }
}

/** Another worker took over the run (ABORTED). Stop; do not retry. */
export class LeaseLost extends WaymarkError {
  get runId(): string {
    return this.meta('run_id');
  }
}

/** The run's status does not allow the operation (FAILED_PRECONDITION). */
export class WrongState extends WaymarkError {
  /** The run's status as the server saw it, e.g. "RUNNING". */
  get status(): string {
    return this.meta('status');
  }
}

/** The idempotency key already started a run of another workflow (ALREADY_EXISTS). */
export class IdempotencyConflict extends WaymarkError {
  get existingRunId(): string {
    return this.meta('existing_run_id');
  }
}

/**
 * How an Unavailable came about: `status` the server answered UNAVAILABLE (draining, its store
 * unreachable); `not_sent` no connection could be used (refused, unresolvable, GOAWAY or
 * REFUSED_STREAM), so the server never saw the request; `dropped` the connection broke before a
 * response (a killed server, a reset), so the request may or may not have been processed.
 */
export type UnavailableKind = 'status' | 'not_sent' | 'dropped';

/**
 * The server could not be reached, went away mid-call, or is shutting down (code UNAVAILABLE).
 * The client retries these by itself within its budget (docs/clients.md); this is what is left
 * when the budget ran out, and what an event stream reports when it gives up.
 */
export class Unavailable extends WaymarkError {
  /** See UnavailableKind. */
  readonly kind: UnavailableKind;

  constructor(message: string, kind: UnavailableKind, details: ErrorDetails = {}, options?: { cause?: unknown }) {
    super(Code.Unavailable, message, details, options);
    this.kind = kind;
  }
}

const BY_REASON: Record<string, typeof WaymarkError> = {
  RUN_NOT_FOUND: RunNotFound,
  WORKFLOW_NOT_FOUND: WorkflowNotFound,
  APPROVAL_NOT_FOUND: ApprovalNotFound,
  FLOW_DRIFT: FlowDrift,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  ALREADY_RESOLVED: AlreadyResolved,
  LEASE_LOST: LeaseLost,
  TASK_LOST: TaskLost,
  WORKER_NOT_FOUND: WorkerNotFound,
  WRONG_STATE: WrongState,
  IDEMPOTENCY_KEY_REUSED: IdempotencyConflict,
  SCHEDULE_NOT_FOUND: ScheduleNotFound,
  SCHEDULE_EXISTS: ScheduleExists,
};

/** Node error codes meaning no connection was made, so the request never left. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ERR_HTTP2_GOAWAY_SESSION']);
/** Node error codes meaning an open connection or stream broke. */
const DROPPED = new Set([
  'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ERR_STREAM_DESTROYED', 'ERR_STREAM_PREMATURE_CLOSE', 'ERR_HTTP2_INVALID_STREAM',
  'ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_STREAM_CANCEL', 'ERR_HTTP2_INVALID_SESSION',
]);

/**
 * Whether `err` is a connection failure rather than a status the server sent, and which kind.
 * connect-node reports them with several codes: a refused connection as UNAVAILABLE, a reset
 * socket as ABORTED, a stream the peer reset as INTERNAL or CANCELED ("http/2 stream closed with
 * error code ..."), REFUSED_STREAM as UNAVAILABLE. The Node error in the cause chain, or that
 * message, tells them from statuses; a status from the server never has either.
 */
export function connectionFailure(err: ConnectError): 'not_sent' | 'dropped' | undefined {
  const codes: string[] = [];
  for (let e: unknown = err.cause, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
  }
  if (codes.some((c) => NOT_SENT.has(c))) return 'not_sent';
  const message = err.rawMessage;
  if (message.startsWith('http/2 stream closed with error code REFUSED_STREAM')) return 'not_sent';
  if (codes.some((c) => DROPPED.has(c)) || message.startsWith('http/2 stream closed')) return 'dropped';
  // A session the peer closed or destroyed before answering; connect-node passes Node's text.
  if (err.code !== Code.Unavailable && /^(socket hang up|The pending stream has been canceled|Stream closed with error code)/.test(message)) return 'dropped';
  return undefined;
}

/** The typed error for anything a call threw (a ConnectError, a network error). */
export function toWaymarkError(err: unknown): WaymarkError {
  if (err instanceof WaymarkError) return err;
  const connect = ConnectError.from(err);
  const info = connect.findDetails(ErrorInfoSchema)[0];
  const fieldViolations = connect.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
  const retry = connect.findDetails(RetryInfoSchema)[0]?.retryDelay;
  const retryDelayMs = retry ? Number(retry.seconds) * 1000 + Math.round(retry.nanos / 1e6) : undefined;
  const details: ErrorDetails = { reason: info?.reason, domain: info?.domain, metadata: info ? { ...info.metadata } : undefined, fieldViolations, retryDelayMs };
  if (!info) {
    const failure = connectionFailure(connect);
    if (failure) {
      const what = failure === 'not_sent' ? 'could not reach the server' : 'the connection to the server broke before it answered';
      return new Unavailable(`${what}: ${connect.rawMessage}`, failure, details, { cause: connect });
    }
  }
  if (connect.code === Code.Unavailable && !(info && BY_REASON[info.reason])) return new Unavailable(connect.rawMessage, 'status', details, { cause: connect });
  const cls = (info && BY_REASON[info.reason]) ?? (connect.code === Code.InvalidArgument ? InvalidArgument : WaymarkError);
  return new cls(connect.code, connect.rawMessage, details, { cause: connect });
}

function toNumber(s: string): number | undefined {
  return /^\d+$/.test(s) ? Number(s) : undefined;
}

/** The error for a decision or signal that another resolution beat; see AlreadyResolved. */
export function alreadyResolved(what: string, response: unknown): AlreadyResolved {
  const err = new AlreadyResolved(
    Code.FailedPrecondition,
    `${what} was already resolved by another decision, signal, timeout or cancellation; nothing was changed`,
    { reason: 'ALREADY_RESOLVED' },
  );
  err.response = response;
  return err;
}
