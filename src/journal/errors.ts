/**
 * Domain errors. Each carries a stable `reason` (the google.rpc.ErrorInfo reason the server maps it
 * to), structured fields, and whether retrying the same call can succeed. Messages say what to do.
 * Stores translate driver errors into these; only `server/` turns them into gRPC codes.
 */
export abstract class WaymarkError extends Error {
  abstract readonly reason: string;
  /** True when the same call may succeed if repeated later (after a backoff). */
  readonly retryable: boolean = false;
  override get name(): string {
    return this.constructor.name;
  }
}

export class RunNotFoundError extends WaymarkError {
  readonly reason = 'RUN_NOT_FOUND';
  constructor(readonly runId: string) {
    super(`run ${runId} was not found in this namespace; check the id and the namespace it was started in`);
  }
}

export class WorkflowNotFoundError extends WaymarkError {
  readonly reason = 'WORKFLOW_NOT_FOUND';
  constructor(readonly workflowName: string) {
    super(`workflow "${workflowName}" is not registered on this server; ListWorkflows shows the registered ones`);
  }
}

/** A write by a process whose lease was taken over. The writer must stop touching the run; never retry. */
export class LeaseLostError extends WaymarkError {
  readonly reason = 'LEASE_LOST';
  constructor(readonly runId: string, readonly epoch: number) {
    super(`lease on run ${runId} at epoch ${epoch} was taken over by another worker; this worker stops executing it`);
  }
}

export class PayloadTooLargeError extends WaymarkError {
  readonly reason = 'PAYLOAD_TOO_LARGE';
  constructor(readonly field: string, readonly sizeBytes: number, readonly limitBytes: number) {
    super(`${field} is ${sizeBytes} bytes, over the limit of ${limitBytes} bytes; send a smaller payload or raise the limit`);
  }
}

/** Why a value cannot be stored: each has its own ErrorInfo reason (docs/api.md "Errors"). */
export type UnstorableProblem = 'nul' | 'surrogate' | 'depth';

const UNSTORABLE: Record<UnstorableProblem, { reason: string; what: string; fix: string }> = {
  nul: {
    reason: 'NUL_CHARACTER', what: 'contains the NUL character (\\u0000), which the journal cannot store',
    fix: 'remove it, or encode binary data (base64)',
  },
  surrogate: {
    reason: 'UNPAIRED_SURROGATE', what: 'contains an unpaired UTF-16 surrogate (a lone \\uD800-\\uDFFF), which is not Unicode text and PostgreSQL cannot store',
    fix: 'send well-formed text, or encode binary data (base64)',
  },
  depth: {
    reason: 'NESTING_TOO_DEEP', what: 'is nested deeper than the journal stores (protobuf clients could not read it back)',
    fix: 'flatten the value',
  },
};

/** The ErrorInfo reason of an UnstorableProblem. */
export function unstorableReason(problem: UnstorableProblem): string {
  return UNSTORABLE[problem].reason;
}

/**
 * A value the journal cannot store, named by where it is (`input.items[2]`): the NUL character
 * (U+0000) or an unpaired surrogate in a string, key or label (valid in a JS string, but PostgreSQL's
 * jsonb and text refuse them, and UTF-8 has no encoding for a lone surrogate), or JSON nested past
 * what protobuf clients decode. Both stores refuse it before writing anything.
 */
export class UnstorableValueError extends WaymarkError {
  readonly reason: string;
  constructor(readonly field: string, readonly problem: UnstorableProblem = 'nul') {
    const { reason, what, fix } = UNSTORABLE[problem];
    super(`${field} ${what}; ${fix}`);
    this.reason = reason;
  }
}

/**
 * A run's journal would pass a limit: `limitEntries` (WAYMARK_MAX_JOURNAL_ENTRIES) or, when
 * `limitBytes` is set, the bytes of its payloads (WAYMARK_MAX_JOURNAL_BYTES). Nothing of the
 * refused append was written; the run fails with it (docs/journal.md "Bounded journals").
 */
export class JournalFullError extends WaymarkError {
  readonly reason = 'JOURNAL_FULL';
  constructor(readonly runId: string, readonly limitEntries: number, readonly limitBytes: number | null = null) {
    super(limitBytes === null
      ? `run ${runId} reached the limit of ${limitEntries} journal entries; continue as new (ctx.continueAsNew) or split the work into child runs`
      : `run ${runId} reached the limit of ${limitBytes} bytes of journaled payloads; continue as new (ctx.continueAsNew) or split the work into child runs`);
  }
}

/** The run is not in a state that allows the operation (e.g. resuming a finished run). */
export class RunStateError extends WaymarkError {
  readonly reason = 'WRONG_STATE';
  constructor(readonly runId: string, readonly status: string, readonly wanted: string) {
    super(`run ${runId} is ${status}; this operation needs a run that is ${wanted}`);
  }
}

/** A start with an idempotency key already used with a different workflow or input. */
export class IdempotencyConflictError extends WaymarkError {
  readonly reason = 'IDEMPOTENCY_KEY_REUSED';
  constructor(readonly idempotencyKey: string, readonly existingRunId: string) {
    super(`idempotency key "${idempotencyKey}" already started run ${existingRunId} with a different workflow; use a new key`);
  }
}

/** The database could not be reached or timed out; the call may succeed later. */
export class StoreUnavailableError extends WaymarkError {
  readonly reason = 'STORE_UNAVAILABLE';
  override readonly retryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(`the journal store is unavailable: ${message}; retry with backoff`, options);
  }
}

/** A sweeper write by a sweeper that is no longer the leader (another took over). Never retry; follow. */
export class SweeperLeaseLostError extends WaymarkError {
  readonly reason = 'SWEEPER_LEASE_LOST';
  constructor(readonly holder: string, readonly epoch: number) {
    super(`sweeper ${holder} lost the leader lease at epoch ${epoch}; another sweeper acts now, this one follows`);
  }
}

/** AdminService: no API key with this id (revoked keys are still found). */
export class ApiKeyNotFoundError extends WaymarkError {
  readonly reason = 'KEY_NOT_FOUND';
  constructor(readonly keyId: string) {
    super(`API key ${keyId} was not found; ListKeys shows the keys (their ids are the part after "wmk_")`);
  }
}

/** AdminService: the client certificate is bound to another API key already (a certificate authenticates one key, ever). */
export class ClientCertificateTakenError extends WaymarkError {
  readonly reason = 'CLIENT_CERT_TAKEN';
  constructor(readonly fingerprint: string) {
    super(`the client certificate ${fingerprint} is bound to another API key already; issue a new certificate for this key`);
  }
}

/** CreateStreamToken on a server with no WAYMARK_STREAM_TOKEN_SECRET: it cannot sign tokens every replica accepts. */
export class StreamTokensDisabledError extends WaymarkError {
  readonly reason = 'STREAM_TOKENS_DISABLED';
  constructor() {
    super('this server mints no stream tokens: set WAYMARK_STREAM_TOKEN_SECRET (the same value on every replica) to enable them');
  }
}

/** ScheduleService: CreateSchedule with an id the namespace already has. */
export class ScheduleExistsError extends WaymarkError {
  readonly reason = 'SCHEDULE_EXISTS';
  constructor(readonly scheduleId: string) {
    super(`schedule "${scheduleId}" exists in this namespace; UpdateSchedule changes it, or pick another id`);
  }
}

/** ScheduleService: no schedule of this id in the namespace. */
export class ScheduleNotFoundError extends WaymarkError {
  readonly reason = 'SCHEDULE_NOT_FOUND';
  constructor(readonly scheduleId: string) {
    super(`schedule "${scheduleId}" was not found in this namespace; ListSchedules shows its schedules`);
  }
}
