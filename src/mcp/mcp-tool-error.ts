import { WaymarkError } from '../journal/errors.js';
import type { Json } from '../journal/run.js';

/**
 * An MCP tool answered with `isError: true`: the server ran the call and reports that the tool
 * failed (bad arguments, a refusal, an upstream error). It is the tool's answer, so it is not
 * retried (a transport failure is); the workflow gets it as the call's error, with the content.
 */
export class McpToolError extends WaymarkError {
  readonly reason = 'MCP_TOOL_ERROR';
  readonly nonRetryable = true;
  constructor(readonly tool: string, readonly content: Json) {
    super(`MCP tool "${tool}" reported an error: ${summary(content)}; catch the error to take another path`);
  }
}

/**
 * The server no longer has a task a run awaits: its time to live ran out, or the server binds
 * tasks to the MCP session that created them and this replica's session is another one (a crash
 * moved the run). Not retried; the call's effect cannot know whether the tool ran.
 */
export class McpTaskLostError extends WaymarkError {
  readonly reason = 'MCP_TASK_LOST';
  readonly nonRetryable = true;
  constructor(readonly server: string, readonly taskId: string, detail: string) {
    super(`MCP server "${server}" no longer has task ${taskId} (${detail}): it expired, or the server keeps tasks per session and the run moved to another replica; check the server for the task's outcome (docs/mcp.md "Tasks")`);
  }
}

function summary(content: Json): string {
  if (Array.isArray(content)) {
    const text = content.map((c) => (c !== null && typeof c === 'object' && !Array.isArray(c) && typeof c.text === 'string' ? c.text : '')).join(' ').trim();
    if (text) return text.slice(0, 500);
  }
  return JSON.stringify(content).slice(0, 500);
}
