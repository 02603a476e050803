// runtime/: the AgentHost one ctx.agent call gets: model and tool calls as journaled effects in its scope.
// Must not import src/agent (the loop lives there) nor write except through effect-runner.
import type { Json } from '../../journal/run.js';
import { FORK_LABELS } from '../../journal/fork-labels.js';
import type { AgentHost, ModelCallOutcome, ToolDenial, ToolOutcome } from '../author/agent-contract.js';
import { toJson } from '../replay/content-key.js';
import { isRetryTimer, MODEL_RETRY_DEFAULT, retryPolicy } from '../author/retry.js';
import { perform } from './effect-runner.js';
import { DeltaPublisher, NO_DELTAS } from './delta-publisher.js';
import { EffectFailedError, InvalidInputError, NotJsonError, ToolApprovalDeniedError, ToolNotFoundError } from '../errors.js';
import { remoteToolStandIn } from './remote-calls.js';
import { mcpToolName, mcpToolStandIn } from './mcp-calls.js';
import { withToolCallId } from './tool-call-id.js';
import type { Execution } from './execution.js';
import type { Registry } from '../registry.js';
import type { Tool } from '../author/tool.js';
import type { WorkflowContext } from '../author/workflow.js';

/*
 * The AgentHost of one ctx.agent call (agent-runtime.ts): the engine's journaled primitives, bound
 * to the agent's scope. Model calls are two-phase effects of kind `model` whose `ok` entry carries
 * the `usage` and `costUsd` columns; tool calls go through ctx.tool, so policy, validation and
 * idempotency keys are exactly those of workflow code.
 */

export function createAgentHost(params: { execution: Execution; registry: Registry; scope: string; ctx: WorkflowContext }): AgentHost {
  const { execution: exec, registry, scope, ctx } = params;
  return {
    run: exec.run,
    scope,
    preview: exec.mode === 'preview',
    modelOverride: exec.run.labels[FORK_LABELS.model] ?? null,
    logger: exec.logger,
    signal: exec.abort.signal,
    tool: (name) => registry.tool(name),
    async resolveTool(name) {
      if (mcpToolName(name)) return mcpToolStandIn(exec, name, scope);
      if (registry.hasTool(name) || !exec.remote) return registry.tool(name);
      const info = await exec.remote.declaration(exec.run.namespace, name);
      if (!info) throw new ToolNotFoundError(name);
      return remoteToolStandIn(info.declaration);
    },
    modelCall(name, args) {
      const call = exec.call('model', name, args, scope);
      const { decision } = call;
      const { action } = decision;
      return {
        // A fired backoff timer means the next attempt calls the model.
        live: action === 'live' || action === 'rerun' || action === 'redispatch' || (action === 'resolved' && isRetryTimer(decision.suspension)),
        admitted: action === 'redispatch',
        idempotencyKey: call.idempotencyKey,
        perform({ intent, execute, retry, classify, timeoutMs, afterIntent }) {
          const policy = retryPolicy(MODEL_RETRY_DEFAULT, retry, classify ?? null);
          if (Array.isArray(policy)) throw new InvalidInputError('the retry option of ctx.agent', policy);
          let columns: ModelCallOutcome | null = null;
          return perform(exec, call, {
            twoPhase: true,
            intent,
            ...(afterIntent ? { afterIntent } : {}),
            execute: async (signal, headSeq) => {
              const deltas = publisherFor(exec, headSeq);
              try {
                columns = await execute({ idempotencyKey: call.idempotencyKey, signal, deltas });
              } finally {
                // Every delta of this attempt commits before its result is journaled.
                await deltas.flush();
              }
              return columns.value;
            },
            columns: () => (columns ? { usage: columns.usage, costUsd: columns.costUsd } : {}),
            retry: policy,
            timeoutMs: timeoutMs ?? null,
          });
        },
      };
    },
    callTool: (tool, args, toolCallId) => withToolCallId(toolCallId, () => callTool(exec, scope, ctx, tool, args)),
    emit: (event) => ctx.emit(event),
    read: (fn) => exec.read(fn),
    async budgetLock(rootRunId) {
      const lock = await exec.read((store) => store.budgetLock({ namespace: exec.run.namespace, rootRunId }));
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        void lock.release().catch((err: unknown) => exec.logger.warn({ runId: exec.run.id, err }, 'releasing the budget lock failed; it goes with its connection'));
      };
      // An execution that ends while holding it (stopped, parked, a branch threw) gives it back.
      void exec.whenEnded().then(release);
      return release;
    },
  };
}

/** The attempt's publisher: its call's `running` entry and the lease epoch it runs under name it. */
function publisherFor(exec: Execution, headSeq: number | null): DeltaPublisher | typeof NO_DELTAS {
  if (headSeq === null || exec.mode !== 'live' || !exec.store || !exec.lease) return NO_DELTAS;
  return new DeltaPublisher({ store: exec.store, runId: exec.run.id, entrySeq: headSeq, attempt: exec.lease.epoch, logger: exec.logger });
}

/**
 * A `deny` policy is journaled as one `ok` entry holding the denial (not an `error`, as ctx.tool
 * writes for workflow code): inside an agent a denial is an answer the model gets, not a failure.
 * An `ask` denial needs no entry of its own: the approval's resolution records it.
 */
async function callTool(exec: Execution, scope: string, ctx: WorkflowContext, tool: Tool, args: unknown): Promise<ToolOutcome> {
  if (tool.policy === 'deny') {
    const call = exec.call('tool', tool.name, toJson(args, `the arguments of tool "${tool.name}"`), scope);
    const value = await perform(exec, call, {
      twoPhase: false,
      execute: async () => denial(tool.name, 'policy', `tool "${tool.name}" is not allowed to run (its policy is deny)`) as unknown as Json,
    });
    return { status: 'denied', denial: value as unknown as ToolDenial };
  }
  try {
    // A remote or MCP tool's stand-in is called by name: ctx.tool's remote path dispatches it to a
    // worker, its MCP path calls the server (policy and schema from the run's pin).
    return { status: 'ok', value: (await (tool.remote || tool.mcp ? ctx.tool(tool.name, args) : ctx.tool(tool, args))) as Json };
  } catch (error) {
    if (error instanceof ToolApprovalDeniedError) {
      const by = error.deniedBy;
      return { status: 'denied', denial: denial(tool.name, by, error.comment ?? (by === 'timeout' ? 'nobody decided before the deadline' : `denied by ${by}`)) };
    }
    if (error instanceof EffectFailedError) return { status: 'error', error: { name: error.errorName, message: error.errorMessage } };
    // Arguments the model got wrong: it is told why and may try again. Engine failures (a journal
    // that disagrees with the code, a full journal) still end the run.
    if (error instanceof InvalidInputError || error instanceof NotJsonError || isRefusedPayload(error)) {
      return { status: 'error', error: { name: error.name, message: error.message } };
    }
    throw error;
  }
}

function denial(toolName: string, deniedBy: string, message: string): ToolDenial {
  return { __denied: true, toolName, deniedBy, message };
}

/** Arguments the journal refused (too large, or holding a NUL) before anything ran: the model may send smaller ones. */
function isRefusedPayload(error: unknown): error is Error {
  return error instanceof Error && (error.name === 'PayloadTooLargeError' || error.name === 'UnstorableValueError');
}
