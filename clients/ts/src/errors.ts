import { Code, ConnectError } from '@connectrpc/connect';
import { BadRequestSchema, ErrorInfoSchema, RetryInfoSchema } from './gen/google/rpc/error_details_pb.js';

/** One invalid field of a request (google.rpc.BadRequest). */
export interface FieldViolation {
  field: string;
  description: string;
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
    details: { reason?: string; domain?: string; metadata?: Record<string, string>; fieldViolations?: FieldViolation[]; retryDelayMs?: number } = {},
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

  /** True when the same call may succeed later: the server is unavailable or asked to back off. */
  get retryable(): boolean {
    return this.code === Code.Unavailable || this.retryDelayMs !== undefined;
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
 * "already_resolved"; `approve`, `deny` and `sendSignal` throw this for it (a repeated request id
 * or signal id is not an error). `response` is the server's answer.
 */
export class AlreadyResolved extends WaymarkError {
  response: unknown;
}

/** Another worker took over the run (ABORTED). Stop; do not retry. */
export class LeaseLost extends WaymarkError {
  get runId(): string {
    return this.meta('run_id');
  }
}

/** The run's status does not allow the operation (FAILED_PRECONDITION). */
export class WrongState extends WaymarkError {
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

/** The server could not be reached or is shutting down (UNAVAILABLE); retry with backoff. */
export class Unavailable extends WaymarkError {}

const BY_REASON: Record<string, typeof WaymarkError> = {
  RUN_NOT_FOUND: RunNotFound,
  WORKFLOW_NOT_FOUND: WorkflowNotFound,
  APPROVAL_NOT_FOUND: ApprovalNotFound,
  FLOW_DRIFT: FlowDrift,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  ALREADY_RESOLVED: AlreadyResolved,
  LEASE_LOST: LeaseLost,
  WRONG_STATE: WrongState,
  IDEMPOTENCY_KEY_REUSED: IdempotencyConflict,
};

/** The typed error for anything a call threw (a ConnectError, an abort, a network error). */
export function toWaymarkError(err: unknown): WaymarkError {
  if (err instanceof WaymarkError) return err;
  const connect = ConnectError.from(err);
  const info = connect.findDetails(ErrorInfoSchema)[0];
  const fieldViolations = connect.findDetails(BadRequestSchema).flatMap((b) => b.fieldViolations.map((v) => ({ field: v.field, description: v.description })));
  const retry = connect.findDetails(RetryInfoSchema)[0]?.retryDelay;
  const retryDelayMs = retry ? Number(retry.seconds) * 1000 + Math.round(retry.nanos / 1e6) : undefined;
  const details = { reason: info?.reason, domain: info?.domain, metadata: info ? { ...info.metadata } : undefined, fieldViolations, retryDelayMs };
  const cls =
    (info && BY_REASON[info.reason]) ??
    (connect.code === Code.InvalidArgument ? InvalidArgument : connect.code === Code.Unavailable ? Unavailable : WaymarkError);
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
