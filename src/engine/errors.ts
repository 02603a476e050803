// engine/: the engine's error classes, which every room of the engine may import, exported to workflow authors by
// src/index.ts and mapped to gRPC codes by the server. Must not import anything of the engine: an error is data with a stable reason.
import { WaymarkError } from '../journal/errors.js';
import type { Json, RunError } from '../journal/run.js';

/*
 * Errors the engine raises. Like the domain errors in journal/errors.ts each has a stable `reason`,
 * structured fields, a retry classification and a message that says what to do. The server maps
 * them to gRPC codes (INVALID_ARGUMENT for the *Invalid* ones with their `violations` as field
 * violations, FAILED_PRECONDITION for drift and wrong state, NOT_FOUND for unknown targets).
 */

/** One failed check of a payload: `field` is a dotted path (`items[2].sku`), empty for the whole value. */
export interface FieldViolation {
  field: string;
  description: string;
}

/** A workflow input, tool argument or workflow output that fails its zod schema. */
export class InvalidInputError extends WaymarkError {
  readonly reason = 'INVALID_INPUT';
  constructor(readonly subject: string, readonly violations: FieldViolation[]) {
    super(`${subject} is invalid: ${describe(violations)}; fix the payload to match the schema`);
  }
}

/**
 * A request the engine refuses on what only it can check (a worker's tool declarations against the
 * tools served, the namespace's tool count): the request's own field names, as a request
 * validated at the server (INVALID_REQUEST, docs/api.md "Errors").
 */
export class InvalidDeclarationError extends WaymarkError {
  readonly reason = 'INVALID_REQUEST';
  constructor(readonly subject: string, readonly violations: FieldViolation[]) {
    super(`${subject} is invalid: ${describe(violations)}; fix these fields and send it again (nothing was stored)`);
  }
}

/** A workflow returned a value that fails its `output` schema. The run fails with it. */
export class InvalidOutputError extends WaymarkError {
  readonly reason = 'INVALID_OUTPUT';
  constructor(readonly workflowName: string, readonly violations: FieldViolation[]) {
    super(`workflow "${workflowName}" returned an output that fails its output schema: ${describe(violations)}; fix the workflow body or the schema`);
  }
}

/**
 * A signal or approval payload that fails the JSON Schema pinned in the suspension. Nothing was
 * journaled and the run stays parked; send a corrected payload.
 */
export class InvalidResolutionError extends WaymarkError {
  readonly reason = 'INVALID_RESOLUTION';
  constructor(readonly runId: string, readonly seq: number, readonly violations: FieldViolation[]) {
    super(`payload for the wait at seq ${seq} of run ${runId} fails its pinned schema: ${describe(violations)}; nothing was recorded, send a payload that matches the schema`);
  }
}

/** A tool call refused: by a person deciding its approval, by a timeout, or by a `deny` policy. */
export class ToolApprovalDeniedError extends WaymarkError {
  readonly reason = 'TOOL_APPROVAL_DENIED';
  constructor(readonly toolName: string, readonly deniedBy: string, readonly comment: string | null = null) {
    super(`tool "${toolName}" was not allowed to run (denied by ${deniedBy}${comment ? `: ${comment}` : ''}); catch ToolApprovalDeniedError to take another path`);
  }
}

export class ToolNotFoundError extends WaymarkError {
  readonly reason = 'TOOL_NOT_FOUND';
  constructor(readonly toolName: string) {
    super(`tool "${toolName}" is not registered on this server; export it from the workflows module or use a built-in (http, echo)`);
  }
}

/** The namespace has no MCP server of that name (docs/mcp.md); journaled as a call's outcome, it is not retried. */
export class McpServerNotFoundError extends WaymarkError {
  readonly reason = 'MCP_SERVER_NOT_FOUND';
  readonly nonRetryable = true;
  constructor(readonly server: string) {
    super(`MCP server "${server}" is not registered in this namespace; register it with \`waymark mcp add\` (docs/mcp.md)`);
  }
}

/**
 * A run calls an MCP tool it pinned (docs/mcp.md "Drift"), but the server no longer lists that tool,
 * or lists it with another input schema. The call is not sent: the run was built against the pinned
 * schema, and arguments made for it may mean something else now. Not retried; the run fails with
 * it unless the code catches it. `pinSeq` is the journal entry of the pin, for `invalidate`.
 */
export class McpToolDriftError extends WaymarkError {
  readonly reason = 'MCP_TOOL_DRIFT';
  readonly nonRetryable = true;
  readonly choices = ['repin', 'restart', 'abandon'] as const;
  constructor(
    readonly server: string,
    readonly tool: string,
    readonly change: 'vanished' | 'schema_changed',
    readonly pinSeq: number | null,
  ) {
    const what = change === 'vanished' ? 'no longer lists it' : 'lists it with another input schema';
    const repin = pinSeq === null ? 'resume the run invalidating its pin' : `resume the run with invalidate ${pinSeq} (its pin) to list the tools again`;
    super(`MCP tool "${server}.${tool}" drifted: the run pinned it, but server "${server}" ${what}; nothing was sent. ${repin}, resume with drift recovery "restart" (a new run with the same input) or "abandon", or restore the tool on the server`);
  }
}

/** The run pinned a different definition of its workflow than the one registered now. */
export class FlowDriftError extends WaymarkError {
  readonly reason = 'FLOW_DRIFT';
  readonly choices = ['restart', 'abandon'] as const;
  constructor(
    readonly runId: string,
    readonly workflowName: string,
    readonly pinnedDigest: string,
    readonly currentDigest: string,
  ) {
    super(`run ${runId} was started with another definition of workflow "${workflowName}" (digest ${pinnedDigest.slice(0, 12)}, now ${currentDigest.slice(0, 12)}) and its drift policy is strict; resume it with drift "restart" (start a new run with the same input) or "abandon" (cancel it), or deploy the original definition`);
  }
}

/** A journal entry matched a call by content key but records a different kind or name. */
export class NonDeterminismError extends WaymarkError {
  readonly reason = 'NON_DETERMINISM';
  constructor(
    readonly runId: string,
    readonly scope: string,
    readonly expected: string,
    readonly found: string,
    readonly detail: string,
  ) {
    super(`run ${runId}, scope "${scope}": the code called ${expected} but the journal has ${found} (${detail}); the journal and the workflow code disagree, resume with invalidate or restart the run`);
  }
}

/** Journal entries that do not fit together (a terminal pointing at nothing, seqs with gaps). */
export class JournalCorruptError extends WaymarkError {
  readonly reason = 'JOURNAL_CORRUPT';
  constructor(readonly runId: string, readonly seq: number, readonly detail: string) {
    super(`journal of run ${runId} is inconsistent at seq ${seq}: ${detail}; it cannot be replayed, restart the run`);
  }
}

/** A file that is not a journal export `waymark replay` can read (docs/replay.md "The file"). */
export class JournalExportError extends WaymarkError {
  readonly reason = 'INVALID_JOURNAL_EXPORT';
  constructor(readonly detail: string) {
    super(`not a journal export this version of waymark reads: ${detail}; export it again with waymark runs export`);
  }
}

/** `invalidate` named a seq that is not an effect of the run. */
export class InvalidateTargetError extends WaymarkError {
  readonly reason = 'INVALID_INVALIDATE_TARGET';
  constructor(readonly runId: string, readonly seq: number, readonly detail: string) {
    super(`cannot invalidate seq ${seq} of run ${runId}: ${detail}; GetJournal lists the effect entries`);
  }
}

/** ForkRun named no fork point it can fork at (docs/forks.md): `field` is the request field (at_seq, decision, model, workflow_version). */
export class InvalidForkError extends WaymarkError {
  readonly reason = 'INVALID_FORK';
  constructor(readonly runId: string, readonly field: string, readonly detail: string) {
    super(`cannot fork run ${runId}: ${detail}`);
  }
}

/** CompareRuns of two runs of different workflows (docs/forks.md "Comparing runs"). */
export class RunsNotComparableError extends WaymarkError {
  readonly reason = 'RUNS_NOT_COMPARABLE';
  constructor(readonly runIdA: string, readonly runIdB: string, readonly detail: string) {
    super(`cannot compare run ${runIdA} with run ${runIdB}: ${detail}`);
  }
}

/** A replay in strict mode (preview, golden journals) reached a call the journal cannot answer. */
export class JournalMissError extends WaymarkError {
  readonly reason = 'JOURNAL_MISS';
  constructor(readonly scope: string, readonly kind: string, readonly effectName: string, readonly occurrence: number, readonly why: string) {
    super(`replay reached ${kind} "${effectName}" (scope "${scope}", occurrence ${occurrence}) which would run live (${why}); in strict replay every call must be answered by the journal`);
  }
}

/** A step or tool failed; thrown the same way on the first run and on every replay. */
export class EffectFailedError extends WaymarkError {
  readonly reason: string = 'EFFECT_FAILED';
  constructor(
    readonly effectKind: string,
    readonly effectName: string,
    /** The class name of the original error, e.g. `TypeError`. */
    readonly errorName: string,
    readonly errorMessage: string,
    readonly details: Json | null,
  ) {
    super(`${effectKind} "${effectName}" failed with ${errorName}: ${errorMessage}`);
  }
}

export class ChildRunFailedError extends WaymarkError {
  readonly reason = 'CHILD_RUN_FAILED';
  constructor(readonly childRunId: string, readonly workflowName: string, readonly status: string, readonly childError: RunError | null) {
    super(`child run ${childRunId} of workflow "${workflowName}" ended ${status}${childError ? `: ${childError.message}` : ''}; catch ChildRunFailedError to handle it`);
  }
}

/** A `ctx.signal` wait passed its deadline and had no default value. */
export class SignalTimeoutError extends WaymarkError {
  readonly reason = 'SIGNAL_TIMEOUT';
  constructor(readonly signalName: string) {
    super(`no signal "${signalName}" arrived before its deadline; give ctx.signal a default, or catch SignalTimeoutError`);
  }
}

export class ApprovalNotFoundError extends WaymarkError {
  readonly reason = 'APPROVAL_NOT_FOUND';
  constructor(readonly approvalId: string) {
    super(`approval ${approvalId} was not found; ListApprovals shows the pending ones`);
  }
}

/** A value a workflow handed to the journal (a step result, tool arguments) that JSON cannot carry. */
export class NotJsonError extends WaymarkError {
  readonly reason = 'NOT_JSON';
  constructor(readonly what: string, readonly detail: string) {
    super(`${what} cannot be stored as JSON (${detail}); return plain objects, arrays, strings, numbers, booleans or null`);
  }
}

/** A workflow or tool definition that cannot be registered. */
export class DefinitionError extends WaymarkError {
  readonly reason = 'INVALID_DEFINITION';
  constructor(readonly what: string, readonly detail: string) {
    super(`${what}: ${detail}`);
  }
}

/** ctx.agent on a Registry built without an agent runtime (the engine cannot import src/agent). */
export class AgentRuntimeMissingError extends WaymarkError {
  readonly reason = 'AGENT_RUNTIME_MISSING';
  constructor() {
    super('ctx.agent needs an agent runtime: build the Registry with { agent: createAgentRuntime() } (exported by waymark); waymark server and waymark dev do this');
  }
}

function describe(violations: FieldViolation[]): string {
  return violations.map((v) => (v.field ? `${v.field}: ${v.description}` : v.description)).join('; ') || 'no details';
}

/**
 * The reason an execution was stopped by its own process (RunDriver.executionsAbort, on shutdown):
 * the AbortSignal handed to tools and model calls carries it. Nothing more is written; the run's
 * lease is released once the execution settled, or expires and the sweeper recovers the run.
 */
export class ExecutionAbortedError extends WaymarkError {
  readonly reason = 'EXECUTION_ABORTED';
  override readonly retryable = true;
  constructor(readonly runId: string, readonly why: string) {
    super(`the execution of run ${runId} was stopped on this worker (${why}); another worker continues the run`);
  }
}

/**
 * Thrown by a step or tool to fail the call at once, whatever its retry policy. Subclass it for
 * your own errors (their name is the subclass's). Recognised by its `nonRetryable: true` field, so
 * a copy of this class from another `waymark` instance works too.
 */
export class NonRetryableError extends WaymarkError {
  readonly reason = 'NON_RETRYABLE';
  readonly nonRetryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * A step, tool or model call failed on every attempt its retry policy allowed. `errorName`,
 * `errorMessage` and `details` are those of the last attempt's failure (as EffectFailedError's),
 * `lastError` its record and `attempts` how many were made. Uncaught, the run fails with reason
 * `retries_exhausted`.
 */
export class RetriesExhaustedError extends EffectFailedError {
  override readonly reason: string = 'RETRIES_EXHAUSTED';
  constructor(effectKind: string, effectName: string, readonly attempts: number, readonly lastError: RunError) {
    super(effectKind, effectName, lastError.name, lastError.message, lastError.details ?? null);
    this.message = `${effectKind} "${effectName}" failed ${attempts} attempts; the last with ${lastError.name}: ${lastError.message}. Catch RetriesExhaustedError to take another path, or give the call a larger retry policy`;
  }
}

/** One attempt of a step, tool or model call ran past its `timeout`; the attempt failed and may be retried. */
export class EffectTimeoutError extends WaymarkError {
  readonly reason = 'EFFECT_TIMEOUT';
  override readonly retryable = true;
  constructor(readonly effectKind: string, readonly effectName: string, readonly timeoutMs: number) {
    super(`${effectKind} "${effectName}" did not finish within its timeout of ${timeoutMs}ms; the attempt was aborted (its AbortSignal fired) and counts as failed`);
  }
}

/**
 * The run did not finish before its deadline (its run `timeout`, docs/workflows.md "Timeouts"). The
 * run ends FAILED with this error (reason `run_timed_out` in GetRun, its terminal journal entry and
 * the event stream), its unfinished children are cancelled, and the AbortSignal handed to its
 * in-flight tools and model calls carries it.
 */
export class RunTimedOutError extends WaymarkError {
  readonly reason = 'RUN_TIMED_OUT';
  constructor(readonly runId: string, readonly deadline: Date) {
    super(`run ${runId} did not finish before its deadline ${deadline.toISOString()}; it was failed and its unfinished child runs were cancelled (give it a longer timeout in StartRun or defineWorkflow)`);
  }
}

/** RegisterFlow refused a flow: every problem with its exact field path (docs/flows.md "Validation"). Nothing was stored. */
export class InvalidFlowError extends WaymarkError {
  readonly reason = 'INVALID_FLOW';
  constructor(readonly flowName: string, readonly violations: FieldViolation[]) {
    super(`flow "${flowName}" is invalid: ${describe(violations)}; fix these fields and register it again (nothing was stored)`);
  }
}

/** RegisterFlow under a name a code workflow has: StartRun would be ambiguous. */
export class FlowNameTakenError extends WaymarkError {
  readonly reason = 'FLOW_NAME_TAKEN';
  constructor(readonly flowName: string) {
    super(`"${flowName}" is the name of a code workflow this deployment serves; give the flow another name`);
  }
}

/** GetFlow of a name or version the namespace does not have. */
export class FlowNotFoundError extends WaymarkError {
  readonly reason = 'FLOW_NOT_FOUND';
  constructor(readonly flowName: string, readonly version: number | null) {
    super(version === null
      ? `flow "${flowName}" is not registered in this namespace; ListFlows shows the registered ones`
      : `flow "${flowName}" has no version ${version} in this namespace; GetFlow without a version returns the latest`);
  }
}

/**
 * A flow run could not go on: a node entered more often than its max_visits (`FLOW_LOOP_BOUND`), a
 * branch with no true condition and no default (`FLOW_NO_BRANCH`), a condition that did not give a
 * bool (`FLOW_CONDITION`), a write that breaks the state schema or an agent answer that breaks its
 * output schema (`FLOW_STATE`). The run fails with it (docs/flows.md "Running a flow").
 */
export class FlowRunError extends WaymarkError {
  constructor(readonly reason: 'FLOW_LOOP_BOUND' | 'FLOW_NO_BRANCH' | 'FLOW_CONDITION' | 'FLOW_STATE', readonly node: string, detail: string) {
    super(`flow node "${node}": ${detail}`);
  }
}
