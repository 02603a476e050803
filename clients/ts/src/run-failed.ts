import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { RunStatus, type Run, type RunError } from './gen/waymark/v1/run_pb.js';

/**
 * `client.result()` found the run FAILED: the workflow threw, or the run could not be recovered.
 * Not a WaymarkError (the call itself succeeded); it is the run's outcome, as Temporal's
 * WorkflowFailedError is. `errorName`, `errorMessage`, `errorReason` and `details` are the
 * run's RunError as the journal recorded it.
 */
export class RunFailed extends Error {
  readonly runId: string;
  /** The RunError's class name, e.g. "ToolApprovalDeniedError". */
  readonly errorName: string;
  readonly errorMessage: string;
  /** Machine-readable, e.g. "budget_exceeded", "interrupted", "cancelled"; empty when none. */
  readonly errorReason: string;
  readonly details: JsonValue | undefined;

  constructor(readonly run: Run, error: RunError | undefined) {
    const name = error?.name ?? '';
    const message = error?.message ?? '';
    super(`run ${run.id} ${run.status === RunStatus.CANCELLED ? 'was cancelled' : 'failed'}${name || message ? `: ${name}${name && message ? ': ' : ''}${message}` : ''}`);
    this.runId = run.id;
    this.errorName = name;
    this.errorMessage = message;
    this.errorReason = error?.reason ?? '';
    this.details = error?.details ? toJson(ValueSchema, error.details) : undefined;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/** `client.result()` found the run CANCELLED; `errorMessage` is the cancel's reason. */
export class RunCancelled extends RunFailed {}
