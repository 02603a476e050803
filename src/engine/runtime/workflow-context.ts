// runtime/: WorkflowContextImpl, the `ctx` a body gets: each method reserves a call and runs it via effect-runner.
// Must not write the journal or decide replay itself.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json, RunError } from '../../journal/run.js';
import { createAgentHost } from './agent-host.js';
import type { AgentMessage, AgentOptions, AgentResult } from '../author/agent-contract.js';
import { schemaHash, toJson } from '../replay/content-key.js';
import { durationMs, type Duration } from '../author/duration.js';
import { retryPolicy, STEP_RETRY_DEFAULT, TOOL_RETRY_DEFAULT, type RetryPolicy } from '../author/retry.js';
import { AgentRuntimeMissingError, ChildRunFailedError, DefinitionError, InvalidInputError, SignalTimeoutError, ToolApprovalDeniedError, ToolNotFoundError } from '../errors.js';
import { errorFromRecord } from '../replay/error-codec.js';
import { REDACTED } from '../../journal/sealed-payload.js';
import { perform, replayedReturn, suspend } from './effect-runner.js';
import type { Execution } from './execution.js';
import { ANY_JSON_SCHEMA, pinSchema, validatePinned, zodViolations, type PinnedSchema } from '../replay/payload-schema.js';
import type { Registry } from '../registry.js';
import { childScope } from '../replay/replay.js';
import { resolutionPayload, type SuspensionPayload } from './suspension.js';
import { isTool, type Tool } from '../author/tool.js';
import { mcpCallOnce, mcpPin, mcpPinnedTool, mcpToolName } from './mcp-calls.js';
import { mcpTaskResult } from './mcp-tasks.js';
import { ContinueAsNewRequest } from './continue-as-new.js';
import {
  DEFAULT_APPROVAL_SCHEMA, isWorkflow, type ApprovalDecision, type ApprovalRequest, type SignalOptions,
  type StepInfo, type StepOptions, type ToolCallOptions, type Workflow, type WorkflowContext,
} from '../author/workflow.js';

/** How ctx.child creates (or finds again) the child run; the RunDriver supplies it (child-start.ts). */
export type ChildStarter = (params: { workflow: Workflow; input: Json; suspension: JournalEntry; idempotencyKey: string }) => Promise<JournalEntry | null>;

const DEFAULT_APPROVAL = pinSchema(DEFAULT_APPROVAL_SCHEMA);

/**
 * The `ctx` of a workflow body. Every method reserves its call's identity synchronously (before
 * its first await), so `Promise.all` over effects gives each the same identity on every replay.
 * Branch contexts of ctx.parallel are bound to their scope; the root context reads the scope of
 * the async context it is called from, so the root `ctx` also works inside a branch.
 */
export class WorkflowContextImpl implements WorkflowContext {
  constructor(
    private readonly execution: Execution,
    private readonly registry: Registry,
    private readonly startChild: ChildStarter,
    private readonly scope: string | null = null,
  ) {}

  get runId(): string {
    return this.execution.run.id;
  }

  get dryRun(): boolean {
    return this.execution.run.dryRun;
  }

  private get here(): string {
    return this.execution.currentScope(this.scope);
  }

  async step<T>(name: string, fn: (info: StepInfo) => T | Promise<T>, options: StepOptions = {}): Promise<Awaited<T>> {
    // Only a step that asks for retries or a timeout pays for them (the hot path stays as it was).
    const limits = options.retry !== undefined || options.timeout !== undefined ? stepLimits(name, options) : null;
    const call = this.execution.call('step', name, null, this.here);
    const replayed = replayedReturn(this.execution, call);
    if (replayed) return replayed.value as Awaited<T>;
    const value = await perform(this.execution, call, {
      twoPhase: options.intent === true,
      execute: async (signal, _head, traceparent) => toJson(await fn(this.info(call.idempotencyKey, signal, traceparent)), `the result of step "${name}"`),
      ...(limits ? { retry: limits.retry, timeoutMs: limits.timeoutMs } : {}),
    });
    return value as Awaited<T>;
  }

  tool<A, R>(tool: Tool<A, R>, args: A, options?: ToolCallOptions): Promise<R>;
  tool(name: string, args: unknown, options?: ToolCallOptions): Promise<unknown>;
  async tool(nameOrTool: string | Tool, args: unknown, options: ToolCallOptions = {}): Promise<unknown> {
    const scope = this.here;
    const mcp = typeof nameOrTool === 'string' ? mcpToolName(nameOrTool) : null;
    if (mcp) return this.mcpTool(nameOrTool as string, mcp, args, scope, options);
    // A name no in-process tool has is a remote tool's (docs/workers.md), when this server has them.
    if (typeof nameOrTool === 'string' && this.execution.remote && !this.registry.hasTool(nameOrTool)) {
      return this.remoteTool(nameOrTool, args, scope, options);
    }
    if (isTool(nameOrTool) && nameOrTool.remote) return this.remoteTool(nameOrTool.name, args, scope, options);
    const tool = isTool(nameOrTool) ? nameOrTool : this.registry.tool(nameOrTool);
    const limits = options.retry !== undefined || options.timeout !== undefined ? toolCallLimits(tool, options) : null;
    const argsJson = toJson(args, `the arguments of tool "${tool.name}"`);
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) throw new InvalidInputError(`the arguments of tool "${tool.name}"`, zodViolations(parsed.error));
    const mutating = tool.isMutating(parsed.data);
    const exec = this.execution;
    const call = exec.call('tool', tool.name, argsJson, scope);
    // A secret tool's arguments and result are journaled sealed, bound to this run (payload-sealer.ts).
    const sealer = tool.secret ? this.registry.sealer : null;
    if (tool.secret && !sealer) throw new DefinitionError(`tool "${tool.name}"`, 'is marked secret: set WAYMARK_SECRETS_KEYS');
    const runId = exec.run.id;
    const seal = sealer ? { seal: (v: Json) => sealer.seal(v, runId), open: (v: Json) => sealer.open(v, runId) } : undefined;
    const shownArgs = seal ? REDACTED : argsJson;
    const withheld = this.withheld(call, tool.name, tool.policy, mutating);
    if (withheld) return withheld;
    if (tool.policy === 'ask') await this.askForTool(tool.name, tool.description, shownArgs, argsJson, scope);
    return perform(exec, call, {
      twoPhase: mutating,
      intent: seal ? seal.seal(argsJson) : argsJson,
      seal,
      execute: async (signal, _head, traceparent) => toJson(await tool.execute(parsed.data, this.info(call.idempotencyKey, signal, traceparent)), `the result of tool "${tool.name}"`),
      // A tool made by another copy of waymark may predate policies: it gets the default.
      retry: limits?.retry ?? tool.retry ?? TOOL_RETRY_DEFAULT,
      timeoutMs: limits ? limits.timeoutMs : tool.timeoutMs ?? null,
    });
  }

  async now(): Promise<Date> {
    return new Date(await perform(this.execution, this.execution.call('now', 'now', null, this.here), { twoPhase: false, execute: async () => (await this.execution.now()).toISOString() }) as string);
  }

  async uuid(): Promise<string> {
    return (await perform(this.execution, this.execution.call('uuid', 'uuid', null, this.here), { twoPhase: false, execute: async () => randomUUID() })) as string;
  }

  /** Ends the run and hands over to its successor (runtime/continue-as-new.ts): never resolves. */
  async continueAsNew(input: unknown): Promise<never> {
    throw new ContinueAsNewRequest(toJson(input, 'the input of ctx.continueAsNew'));
  }

  async emit(event: { type: string; [key: string]: unknown }): Promise<void> {
    const payload = toJson(event, 'an emitted event');
    const name = typeof event.type === 'string' && event.type ? event.type : 'event';
    const call = this.execution.call('emit', name, payload, this.here);
    await perform(this.execution, call, { twoPhase: false, status: 'info', execute: async () => payload });
  }

  async sleep(duration: Duration): Promise<void> {
    const ms = durationMs(duration);
    const call = this.execution.call('sleep', 'sleep', { ms }, this.here);
    await suspend(this.execution, call, {
      payload: async () => ({
        key: 'sleep',
        title: `sleep ${typeof duration === 'number' ? `${duration}ms` : duration}`,
        ...ANY_JSON_SCHEMA,
        deadlineAt: new Date((await this.execution.now()).getTime() + ms).toISOString(),
        onTimeout: {},
      }),
    });
  }

  async approve<S extends z.ZodType>(request: ApprovalRequest<S>): Promise<ApprovalDecision<z.output<S>>> {
    const schema = (request.schema ?? DEFAULT_APPROVAL_SCHEMA) as z.ZodType;
    const pinned = request.schema ? pinSchema(schema) : DEFAULT_APPROVAL;
    const onTimeout = request.onTimeout ?? 'deny';
    const timeoutValue = onTimeout === 'approve' ? { approved: true } : onTimeout === 'deny' ? { approved: false } : toJson(onTimeout, 'onTimeout');
    if (request.deadline !== undefined) {
      const violations = validatePinned(pinned, timeoutValue);
      if (violations.length > 0) throw new InvalidInputError(`onTimeout of approval "${request.title}" (give a payload that fits its schema)`, violations);
    }
    const call = this.execution.call('approval', request.name ?? 'approval', {
      title: request.title, description: request.description ?? null, schemaHash: pinned.schemaHash,
    }, this.here);
    const decision = await this.awaitApproval(call, {
      title: request.title, description: request.description, pinned, deadline: request.deadline, onTimeout: timeoutValue, extra: {},
    });
    const parsed = schema.safeParse(stripMeta(decision));
    return (parsed.success ? { ...(parsed.data as object), approved: decision.approved, by: decision.by, timedOut: decision.timedOut } : decision) as ApprovalDecision<z.output<S>>;
  }

  async signal<S extends z.ZodType>(name: string, options: SignalOptions<S> = {}): Promise<z.output<S>> {
    const pinned = options.schema ? pinSchema(options.schema) : ANY_JSON_SCHEMA;
    let onTimeout: Json | null = null;
    if (options.default !== undefined) {
      onTimeout = toJson(options.default, `the default of signal "${name}"`);
      const violations = validatePinned(pinned, onTimeout);
      if (violations.length > 0) throw new InvalidInputError(`the default of signal "${name}"`, violations);
    }
    if (options.deadline !== undefined && !(options.deadline instanceof Date)) durationMs(options.deadline); // fail fast on a bad duration
    const call = this.execution.call('signal', name, { schemaHash: pinned.schemaHash }, this.here);
    const resolution = await suspend(this.execution, call, {
      payload: async () => ({ key: name, title: `signal ${name}`, ...pinned, ...(await this.deadline(options.deadline)), onTimeout }),
      // A signal sent before the run waited for it is in the run's inbox: take it instead of parking.
      beforePark: (suspension) => this.execution.signalInboxTake(suspension),
    });
    const r = resolutionPayload(resolution);
    if (r.value === undefined) throw new SignalTimeoutError(name);
    if (!options.schema) return r.value as z.output<S>;
    const parsed = options.schema.safeParse(r.value);
    return (parsed.success ? parsed.data : r.value) as z.output<S>;
  }

  parallel<T extends readonly unknown[]>(branches: { [K in keyof T]: (ctx: WorkflowContext) => Promise<T[K]> }): Promise<T> {
    const parent = this.here;
    const site = this.execution.nextSite(parent);
    const runs = (branches as readonly ((ctx: WorkflowContext) => Promise<unknown>)[]).map((branch, i) => {
      const scope = childScope(parent, `par:${site}:${i}`);
      const ctx = new WorkflowContextImpl(this.execution, this.registry, this.startChild, scope);
      return this.execution.inScope(scope, async () => branch(ctx));
    });
    return Promise.all(runs) as unknown as Promise<T>;
  }

  child<I, O>(workflow: Workflow<I, O>, input: I): Promise<O>;
  child(workflowName: string, input: unknown): Promise<unknown>;
  async child(target: string | Workflow, input: unknown): Promise<unknown> {
    const workflow = isWorkflow(target) ? target : this.registry.workflow(target);
    const parsed = workflow.input.safeParse(input);
    if (!parsed.success) throw new InvalidInputError(`the input of child workflow "${workflow.name}"`, zodViolations(parsed.error));
    const inputJson = toJson(input, `the input of child workflow "${workflow.name}"`);
    const call = this.execution.call('child', workflow.name, inputJson, this.here);
    const resolution = await suspend(this.execution, call, {
      payload: async () => ({ key: workflow.name, title: `child run of ${workflow.name}`, ...ANY_JSON_SCHEMA, onTimeout: null, workflow: workflow.name }),
      beforePark: (suspension) => this.startChild({ workflow, input: inputJson, suspension, idempotencyKey: call.idempotencyKey }),
    });
    const outcome = (resolutionPayload(resolution).value ?? {}) as { runId?: string; status?: string; output?: Json; error?: { name: string; message: string } | null };
    if (outcome.status === 'SUCCEEDED') return outcome.output ?? null;
    throw new ChildRunFailedError(outcome.runId ?? 'unknown', workflow.name, outcome.status ?? 'UNKNOWN', outcome.error ?? null);
  }

  /**
   * ctx.agent: reserves the agent's identity (kind `agent`, keyed by model, prompt and tools; no
   * entry of its own is written) and runs the registry's agent runtime in the scope
   * `agent:<key>:<occurrence>` below this one. Keying the scope by content, not by call order,
   * keeps a finished agent's calls matching when code around it changes (docs/agents.md).
   */
  async agent(prompt: string | readonly AgentMessage[], options: AgentOptions): Promise<AgentResult> {
    const runtime = this.registry.agentRuntime;
    if (!runtime) throw new AgentRuntimeMissingError();
    const parent = this.here;
    const model = runtime.resolveModel(options.model);
    const name = options.agentType ?? 'agent';
    const args = toJson({
      model, system: options.system ?? null, prompt, tools: (options.tools ?? []).map((t) => (typeof t === 'string' ? t : t.name)),
      maxSteps: options.maxSteps ?? null, maxOutputTokens: options.maxOutputTokens ?? null, temperature: options.temperature ?? null,
    }, `the prompt of agent "${name}"`);
    const call = this.execution.call('agent', name, args, parent);
    const scope = childScope(parent, `agent:${call.identity.contentKey.slice(0, 12)}:${call.identity.occurrence}`);
    const ctx = new WorkflowContextImpl(this.execution, this.registry, this.startChild, scope);
    const host = createAgentHost({ execution: this.execution, registry: this.registry, scope, ctx });
    return this.execution.inScope(scope, () => runtime.run(host, { prompt, model, options }));
  }

  /**
   * What a tool call journals instead of running, in-process or remote alike: policy `deny` (a
   * ToolApprovalDeniedError) or, in a dry run, a mutating call's placeholder; null to go on.
   */
  private withheld(call: ReturnType<Execution['call']>, name: string, policy: Tool['policy'], mutating: boolean): Promise<unknown> | null {
    if (policy === 'deny') {
      return perform(this.execution, call, { twoPhase: false, execute: async () => { throw new ToolApprovalDeniedError(name, 'policy'); } });
    }
    if (this.dryRun && mutating) {
      return perform(this.execution, call, { twoPhase: false, execute: async () => ({ __dryRun: true, tool: name }) });
    }
    return null;
  }

  /** An `ask` tool's approval: parks until decided; throws ToolApprovalDeniedError when denied. */
  private async askForTool(name: string, description: string, shownArgs: Json, argsJson: Json, scope: string): Promise<void> {
    const approval = this.execution.call('approval', `tool:${name}`, { tool: name, args: argsJson }, scope);
    const decision = await this.awaitApproval(approval, {
      title: `Allow tool "${name}"?`,
      description: `${description}\nArguments: ${JSON.stringify(shownArgs)}`,
      pinned: DEFAULT_APPROVAL,
      deadline: undefined,
      onTimeout: { approved: false },
      extra: { tool: name, args: shownArgs },
    });
    if (!decision.approved) {
      throw new ToolApprovalDeniedError(name, decision.by ?? (decision.timedOut ? 'timeout' : 'unknown'), typeof decision.comment === 'string' ? decision.comment : null);
    }
  }

  /**
   * A remote tool call (docs/workers.md): the same policy, dry-run and approval rules as an
   * in-process tool, then a `suspended` entry (the intent, with the idempotency key) and its task;
   * the run parks until a worker's result (or the deadline) resolves it, on whichever replica.
   * The identity is reserved before the declaration is read, so concurrent calls keep their order.
   */
  private async remoteTool(name: string, args: unknown, scope: string, options: ToolCallOptions): Promise<unknown> {
    const exec = this.execution;
    const argsJson = toJson(args, `the arguments of tool "${name}"`);
    const call = exec.call('tool', name, argsJson, scope);
    const info = await exec.remote!.declaration(exec.run.namespace, name);
    if (!info) throw new ToolNotFoundError(name);
    // A call's own `timeout` replaces the declared one (the whole call's); its `retry` does not apply: the worker's declaration decides attempts.
    const d = options.timeout === undefined ? info.declaration : { ...info.declaration, timeoutMs: durationMs(options.timeout) };
    if (d.inputSchema !== null) {
      const violations = validatePinned({ schema: d.inputSchema, schemaHash: schemaHash(d.inputSchema) }, argsJson);
      if (violations.length > 0) throw new InvalidInputError(`the arguments of tool "${name}"`, violations);
    }
    const withheld = this.withheld(call, name, d.policy, d.mutating);
    if (withheld) return withheld;
    if (d.policy === 'ask') await this.askForTool(name, d.description, argsJson, argsJson, scope);
    const resolution = await suspend(exec, call, {
      payload: async (): Promise<SuspensionPayload> => ({
        key: 'remote', title: `remote tool ${name}`, description: d.description, ...ANY_JSON_SCHEMA,
        deadlineAt: new Date((await exec.now()).getTime() + d.timeoutMs).toISOString(),
        onTimeout: null, tool: name, queue: d.queue, args: argsJson, timeoutMs: d.timeoutMs,
      }),
      // Also on a replay that parks again: the task is created once per suspension (a crash between the two is healed here).
      beforePark: async (suspension) => {
        const deadlineAt = new Date(String((suspension.payload as { deadlineAt?: unknown }).deadlineAt));
        await exec.remote!.dispatch({
          namespace: exec.run.namespace, runId: exec.run.id, seq: suspension.seq, tool: name, queue: d.queue, input: argsJson,
          idempotencyKey: call.idempotencyKey, maxAttempts: d.maxAttempts, heartbeatTimeoutMs: d.heartbeatTimeoutMs, deadlineAt,
        });
        return null;
      },
    });
    const r = resolutionPayload(resolution);
    if (r.source === 'timeout') {
      throw errorFromRecord({ name: 'EffectTimeoutError', message: `remote tool "${name}" returned no result before its deadline (no worker took it, or none finished it in time)`, reason: 'effect_timeout' }, call);
    }
    if (r.error !== undefined && r.error !== null) throw errorFromRecord(r.error as unknown as RunError, call);
    return r.value ?? null;
  }

  /**
   * An MCP tool (docs/mcp.md): the pinned list (mcp-calls.ts) gives schema, policy and `mutating`;
   * then the rules of any tool, and the idempotency key goes in `_meta`. Identities reserved before
   * any await. A task tool journals an intent even when read-only, its handle being the effect's result (mcp-tasks.ts).
   */
  private async mcpTool(name: string, target: { server: string; tool: string }, args: unknown, scope: string, options: ToolCallOptions): Promise<unknown> {
    const exec = this.execution;
    const argsJson = toJson(args, `the arguments of tool "${name}"`);
    const pinned = mcpPin(exec, target.server, scope);
    const call = exec.call('tool', name, argsJson, scope);
    const t = mcpPinnedTool(name, target.tool, await pinned, argsJson);
    const withheld = this.withheld(call, name, t.policy, t.mutating);
    if (withheld) return withheld;
    if (t.policy === 'ask') await this.askForTool(name, t.description, argsJson, argsJson, scope);
    const limits = stepLimits(name, { timeout: options.timeout ?? t.timeoutMs ?? undefined, retry: options.retry }, TOOL_RETRY_DEFAULT, 'the options of tool call');
    const value = await perform(exec, call, {
      twoPhase: t.mutating || t.taskSupport !== undefined,
      intent: argsJson,
      execute: (signal, _head, traceparent) => mcpCallOnce(exec, target, argsJson, call.idempotencyKey, signal, { traceparent, task: t.taskSupport !== undefined }),
      retry: limits.retry,
      timeoutMs: limits.timeoutMs,
    });
    return mcpTaskResult(exec, target, value, scope, { retry: limits.retry, ask: (c, request) => this.awaitApproval(c, request) });
  }

  private info(idempotencyKey: string, signal: AbortSignal, traceparent: string | null): StepInfo {
    return traceparent ? { idempotencyKey, runId: this.runId, signal, traceparent } : { idempotencyKey, runId: this.runId, signal };
  }

  private async deadline(deadline: Duration | Date | undefined): Promise<{ deadlineAt?: string }> {
    if (deadline === undefined) return {};
    if (deadline instanceof Date) return { deadlineAt: deadline.toISOString() };
    return { deadlineAt: new Date((await this.execution.now()).getTime() + durationMs(deadline)).toISOString() };
  }

  private async awaitApproval(
    call: ReturnType<Execution['call']>,
    request: { title: string; description: string | undefined; pinned: PinnedSchema; deadline: Duration | Date | undefined; onTimeout: Json; extra: Record<string, Json> },
  ): Promise<ApprovalDecision<Record<string, Json>>> {
    if (request.deadline !== undefined && !(request.deadline instanceof Date)) durationMs(request.deadline); // fail fast on a bad duration
    const resolution = await suspend(this.execution, call, {
      payload: async (): Promise<SuspensionPayload> => ({
        key: call.name,
        title: request.title,
        ...(request.description !== undefined ? { description: request.description } : {}),
        ...request.pinned,
        ...(await this.deadline(request.deadline)),
        onTimeout: request.onTimeout,
        ...request.extra,
      }),
    });
    const r = resolutionPayload(resolution);
    const value = (r.value !== null && typeof r.value === 'object' && !Array.isArray(r.value) ? r.value : {}) as Record<string, Json>;
    return { ...value, approved: value.approved === true, by: r.by ?? null, timedOut: r.source === 'timeout' };
  }
}

function stripMeta(decision: ApprovalDecision<Record<string, Json>>): Record<string, Json> {
  const { by: _by, timedOut: _timedOut, ...rest } = decision;
  return rest;
}

/** A tool call's own retry policy (over the tool's) and timeout; InvalidInputError (nothing runs) for bad ones. */
function toolCallLimits(tool: Tool, options: ToolCallOptions): { retry: RetryPolicy; timeoutMs: number | null } {
  const { retry, timeoutMs } = stepLimits(tool.name, options, tool.retry ?? TOOL_RETRY_DEFAULT, 'the options of tool call');
  return { retry, timeoutMs: options.timeout === undefined ? tool.timeoutMs ?? null : timeoutMs };
}

/** The retry policy and timeout a step asked for; InvalidInputError (nothing runs) for bad ones. */
function stepLimits(
  name: string, options: Pick<StepOptions, 'retry' | 'timeout'>, base: RetryPolicy = STEP_RETRY_DEFAULT, subject = 'the options of step',
): { retry: RetryPolicy; timeoutMs: number | null } {
  const retry = retryPolicy(base, options.retry);
  const violations = Array.isArray(retry) ? [...retry] : [];
  let timeoutMs: number | null = null;
  if (options.timeout !== undefined) {
    try {
      timeoutMs = durationMs(options.timeout);
      if (timeoutMs < 1) violations.push({ field: 'timeout', description: 'must be at least 1ms' });
    } catch (error) {
      violations.push({ field: 'timeout', description: (error as Error).message });
    }
  }
  if (violations.length > 0 || Array.isArray(retry)) throw new InvalidInputError(`${subject} "${name}"`, violations);
  return { retry, timeoutMs };
}
