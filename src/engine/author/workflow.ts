// author/: defineWorkflow and the `ctx` interface (WorkflowContext) users program against, exported by src/index.ts.
// Must not import runtime/ beyond types: runtime/workflow-context.ts implements ctx.
import { z } from 'zod';
import { runTimeoutProblem } from '../../journal/limits.js';
import type { Json } from '../../journal/run.js';
import type { AgentMessage, AgentOptions, AgentResult } from './agent-contract.js';
import { canonicalJson, sha256Hex } from '../replay/content-key.js';
import { durationMs, type Duration } from './duration.js';
import { DefinitionError } from '../errors.js';
import type { RetryOptions } from './retry.js';
import type { Tool } from './tool.js';
import { zodSchemaProblem } from './zod-schema.js';

/** Recognises workflows across copies of this module (a user's `waymark` may be another instance). */
export const WORKFLOW_BRAND = Symbol.for('waymark.workflow');

/** What a resume does when the registered definition differs from the one the run pinned. */
export type DriftPolicy = 'warn' | 'strict';

export interface StepInfo {
  /** Stable for this step call across crashes and redispatches. */
  idempotencyKey: string;
  runId: string;
  /** Aborted when this worker loses the run, or when the attempt's `timeout` passes. */
  signal: AbortSignal;
  /**
   * The W3C `traceparent` of this attempt's span when the server traces (docs/tracing.md), to send
   * on the calls the step or tool makes (the built-in `http` tool does); absent when it does not.
   */
  traceparent?: string;
}

/** Options of ctx.step. */
export interface StepOptions {
  /**
   * Journal a `running` intent before `fn` starts (two commits instead of one). A crash after the
   * intent redispatches the same attempt; without it, a crash mid-step re-runs `fn` (at-least-once).
   * Default false.
   */
  intent?: boolean;
  /**
   * How failures of `fn` are retried (docs/workflows.md "Retries and timeouts"). Default one
   * attempt: a step is not retried unless it says so.
   */
  retry?: RetryOptions;
  /** Start to close of one attempt; when it passes `signal` fires and the attempt fails (retryable). Default none. */
  timeout?: Duration;
}

/** Options of one ctx.tool call; each replaces the tool's own for this call (a flow node's `retry` and `timeout`). */
export interface ToolCallOptions {
  /** Over the tool's own policy: fields given here win. */
  retry?: RetryOptions;
  /** Start to close of one attempt. */
  timeout?: Duration;
}

export const DEFAULT_APPROVAL_SCHEMA = z.object({ approved: z.boolean(), comment: z.string().optional() });
type DefaultApproval = typeof DEFAULT_APPROVAL_SCHEMA;

export interface ApprovalRequest<S extends z.ZodType = DefaultApproval> {
  title: string;
  description?: string;
  /** Tells two approvals with the same title apart; default `approval`. */
  name?: string;
  /** The decision payload; default `{ approved: boolean, comment?: string }`. Must have `approved`. */
  schema?: S;
  /** Relative to when the run first asks, or an absolute time. */
  deadline?: Duration | Date;
  /** The decision applied at the deadline (default `deny`): `approve`, `deny`, or a payload. */
  onTimeout?: 'approve' | 'deny' | z.input<S>;
}

/** The winning decision: its payload, who decided (null for a timeout) and whether it timed out. */
export type ApprovalDecision<T = z.output<DefaultApproval>> = T & { approved: boolean; by: string | null; timedOut: boolean };

export interface SignalOptions<S extends z.ZodType = z.ZodType<Json>> {
  /** Payloads are validated against it (pinned when the run parks); default any JSON. */
  schema?: S;
  deadline?: Duration | Date;
  /** Returned when the deadline passes; without it the wait throws SignalTimeoutError. */
  default?: z.input<S>;
}

/** What a workflow body receives. Every method is journaled; see docs/workflows.md. */
export interface WorkflowContext {
  readonly runId: string;
  /** True in a dry run: mutating tools return `{ __dryRun: true }` without executing. */
  readonly dryRun: boolean;
  /** Runs `fn` and journals its result (JSON, one write), replayed after; `{ intent: true }` journals an intent first. */
  step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>, options?: StepOptions): Promise<Awaited<T>>;
  /** Calls a registered tool with validated arguments, exactly once given its idempotency key. */
  tool<A, R>(tool: Tool<A, R>, args: A, options?: ToolCallOptions): Promise<R>;
  tool(name: string, args: unknown, options?: ToolCallOptions): Promise<unknown>;
  /** The current time, journaled (the store's clock unless the engine was given one). */
  now(): Promise<Date>;
  /** A random UUID, journaled. */
  uuid(): Promise<string>;
  /** Parks the run until the duration has passed (the deadline lives in the journal). */
  sleep(duration: Duration): Promise<void>;
  /** Parks the run until a person decides (or the deadline applies `onTimeout`). */
  approve<S extends z.ZodType = DefaultApproval>(request: ApprovalRequest<S>): Promise<ApprovalDecision<z.output<S>>>;
  /** Parks the run until a signal named `name` arrives with a valid payload. */
  signal<S extends z.ZodType = z.ZodType<Json>>(name: string, options?: SignalOptions<S>): Promise<z.output<S>>;
  /** Runs branches concurrently, each in its own journal scope; rejects like Promise.all. */
  parallel<T extends readonly unknown[]>(branches: { [K in keyof T]: (ctx: WorkflowContext) => Promise<T[K]> }): Promise<T>;
  /** Starts a child run and parks until it ends; returns its output or throws ChildRunFailedError. */
  child<I, O>(workflow: Workflow<I, O>, input: I): Promise<O>;
  child(workflowName: string, input: unknown): Promise<unknown>;
  /** Records an event on the run's stream. */
  emit(event: { type: string; [key: string]: unknown }): Promise<void>;
  /**
   * Runs a model-and-tools loop, one journaled model call at a time; each tool call the model asks
   * for goes through ctx.tool. Needs an agent runtime on the Registry (docs/agents.md).
   */
  agent(prompt: string | readonly AgentMessage[], options: AgentOptions): Promise<AgentResult>;
  /**
   * Ends this run and starts its successor, a new run of the same workflow with `input` and a
   * fresh journal, in one atomic step; never returns (docs/workflows.md "Continue as new"). For
   * runs that would outgrow their journal: call it at a point where `input` carries all the state
   * the work needs. Not in a child run.
   */
  continueAsNew(input: unknown): Promise<never>;
}

export interface WorkflowDefinition<I extends z.ZodType, O> {
  name: string;
  version?: string;
  description?: string;
  input: I;
  output?: z.ZodType<O>;
  /** Default `warn`: the journal decides replay per content key. */
  drift?: DriftPolicy;
  /**
   * The run timeout of its runs (docs/workflows.md "Timeouts"): a run not finished this long after
   * it was created fails with RunTimedOutError and its children are cancelled. A StartRun `timeout`
   * replaces it for that run. Default none.
   */
  timeout?: Duration;
}

export interface Workflow<In = unknown, Out = unknown> {
  readonly [WORKFLOW_BRAND]: true;
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly input: z.ZodType;
  readonly output: z.ZodType | null;
  readonly drift: DriftPolicy;
  /** The default run timeout in milliseconds (`timeout`); null: none. */
  readonly timeoutMs: number | null;
  /** JSON Schema of the input (what ListWorkflows shows and clients validate against). */
  readonly inputSchema: Json;
  /** sha256 of name, version, body source and input schema: what a run pins. */
  readonly digest: string;
  readonly body: (ctx: WorkflowContext, input: never) => Promise<Out>;
  /** Carries the input type for `ctx.child(workflow, input)`; never set. */
  readonly __input?: In;
}

const WORKFLOW_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export function defineWorkflow<I extends z.ZodType, O>(
  definition: WorkflowDefinition<I, O>,
  body: (ctx: WorkflowContext, input: z.output<I>) => Promise<O>,
): Workflow<z.input<I>, O> {
  const { name } = definition;
  if (!WORKFLOW_NAME.test(name)) {
    throw new DefinitionError(`workflow "${name}"`, 'a workflow name is 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  const inputProblem = zodSchemaProblem(definition.input);
  if (inputProblem) throw new DefinitionError(`workflow "${name}"`, inputProblem);
  if (typeof body !== 'function') throw new DefinitionError(`workflow "${name}"`, 'the body must be an async function (ctx, input) => output');
  const drift = definition.drift ?? 'warn';
  if (drift !== 'warn' && drift !== 'strict') throw new DefinitionError(`workflow "${name}"`, `drift must be warn or strict, not "${drift}"`);
  const version = definition.version ?? '1';
  const timeoutMs = definition.timeout === undefined ? null : definitionTimeout(name, definition.timeout);
  const inputSchema = JSON.parse(JSON.stringify(z.toJSONSchema(definition.input, { io: 'input', unrepresentable: 'any' }))) as Json;
  return Object.freeze({
    [WORKFLOW_BRAND]: true as const,
    name,
    version,
    description: definition.description ?? '',
    input: definition.input,
    output: definition.output ?? null,
    drift,
    timeoutMs,
    inputSchema,
    digest: workflowDigest({ name, version, source: body.toString(), inputSchema }),
    body: body as (ctx: WorkflowContext, input: never) => Promise<O>,
  });
}

function definitionTimeout(name: string, timeout: Duration): number {
  let ms: number;
  try {
    ms = durationMs(timeout);
  } catch (error) {
    throw new DefinitionError(`workflow "${name}"`, `timeout: ${(error as Error).message}`);
  }
  const problem = runTimeoutProblem(ms);
  if (problem) throw new DefinitionError(`workflow "${name}"`, `timeout ${problem}, got ${JSON.stringify(timeout)}`);
  return ms;
}

/** The digest a run pins: sha256 over name, version, the body's source text and the input schema. */
export function workflowDigest(parts: { name: string; version: string; source: string; inputSchema: Json }): string {
  return sha256Hex(canonicalJson(parts));
}

export function isWorkflow(value: unknown): value is Workflow {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WORKFLOW_BRAND] === true;
}
