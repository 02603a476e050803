// runtime/: MCP tasks (docs/mcp.md "Tasks"): awaiting the task a tools/call created, and its questions as approvals.
// Must not speak the protocol (the McpConnector does) nor write the journal except through effect-runner.
import type { Json } from '../../journal/run.js';
import type { ApprovalDecision } from '../author/workflow.js';
import type { RetryPolicy } from '../author/retry.js';
import { schemaHash } from '../replay/content-key.js';
import type { PinnedSchema } from '../replay/payload-schema.js';
import { McpServerNotFoundError } from '../errors.js';
import type { Call } from './call.js';
import { perform } from './effect-runner.js';
import type { Execution } from './execution.js';
import type { McpTaskAnswer, McpTaskHandle, McpTaskOutcome } from './mcp-connector.js';
import { mcpConnector } from './mcp-calls.js';

/*
 * A tool whose pin says it supports MCP tasks is called task-augmented; a server that takes tasks
 * answers the tools/call with a handle instead of the result. The call's effect journals that
 * handle as its result (`{ mcpTask: { taskId, status } }`), so from then on no replay or resume
 * calls the tool again: the run awaits the task instead. Each await is a one-phase effect
 * `mcp:<server>:tasks/result` (args: the task id and the round) whose result is the tool's
 * result, or the question the task asks (input_required). A question becomes an approval of the
 * run ("Input for tool …": the message, with the question's form fields as the decision's
 * fields); the decision is the answer (approve: accept with the fields; deny: decline), delivered
 * by the next round's await. A replica killed while awaiting leaves the round without a result,
 * so the next execution awaits the same task (test/chaos/mcp-tasks.test.ts).
 */

/** The approval a task's question becomes (the private awaitApproval of WorkflowContext). */
export type AskForInput = (
  call: Call,
  request: { title: string; description: string | undefined; pinned: PinnedSchema; deadline: undefined; onTimeout: Json; extra: Record<string, Json> },
) => Promise<ApprovalDecision<Record<string, Json>>>;

/** The task handle of a tool effect's journaled result, or null for a plain result. */
export function mcpTaskHandle(value: Json): McpTaskHandle | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const h = value.mcpTask;
  if (h === null || typeof h !== 'object' || Array.isArray(h) || typeof h.taskId !== 'string') return null;
  return { taskId: h.taskId, status: typeof h.status === 'string' ? h.status : 'working' };
}

/**
 * What `ctx.tool(name)` returns for a call whose effect journaled `value`: the value itself, or,
 * for a task handle, the task's result after its rounds of awaits and questions.
 */
export async function mcpTaskResult(
  exec: Execution, target: { server: string; tool: string }, value: Json, scope: string, options: { retry: RetryPolicy; ask: AskForInput },
): Promise<Json> {
  const handle = mcpTaskHandle(value);
  if (!handle) return value;
  const name = `${target.server}.${target.tool}`;
  let answer: McpTaskAnswer | null = null;
  for (let round = 0; ; round++) {
    const call = exec.call('step', `mcp:${target.server}:tasks/result`, { taskId: handle.taskId, tool: name, round }, scope);
    const sent = answer;
    const outcome = (await perform(exec, call, {
      twoPhase: false,
      retry: options.retry,
      execute: async (signal) => {
        const connector = mcpConnector(exec);
        const server = await connector.server(exec.run.namespace, target.server);
        if (!server) throw new McpServerNotFoundError(target.server);
        return (await connector.awaitTask({ server, taskId: handle.taskId, round, answer: sent, signal })) as unknown as Json;
      },
    })) as unknown as McpTaskOutcome;
    if ('result' in outcome) return outcome.result;
    const { message, requestedSchema } = outcome.inputRequired;
    const approval = exec.call('approval', `mcp-input:${name}`, { taskId: handle.taskId, round }, scope);
    const decision = await options.ask(approval, {
      title: `Input for tool "${name}": ${message}`.slice(0, 500),
      description: `MCP server "${target.server}" asks, for task ${handle.taskId} of tool "${name}": ${message}\nApprove with the fields it asks for, or deny to decline.`,
      pinned: decisionSchema(requestedSchema),
      deadline: undefined,
      onTimeout: { approved: false },
      extra: { tool: name, taskId: handle.taskId, requestedSchema },
    });
    const { approved, by: _by, timedOut: _timedOut, comment: _comment, ...fields } = decision;
    answer = approved ? { action: 'accept', content: fields } : { action: 'decline' };
  }
}

/**
 * The decision's schema: `approved` (and an optional comment) plus the fields of the question's
 * form, none required (a denial carries none; the server checks what an approval sends).
 */
function decisionSchema(requested: Json): PinnedSchema {
  const properties = requested !== null && typeof requested === 'object' && !Array.isArray(requested)
    && requested.properties !== null && typeof requested.properties === 'object' && !Array.isArray(requested.properties)
    ? requested.properties : {};
  const schema: Json = {
    type: 'object',
    properties: { ...properties, approved: { type: 'boolean' }, comment: { type: 'string' } },
    required: ['approved'],
  };
  return { schema, schemaHash: schemaHash(schema) };
}
