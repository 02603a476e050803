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

function summary(content: Json): string {
  if (Array.isArray(content)) {
    const text = content.map((c) => (c !== null && typeof c === 'object' && !Array.isArray(c) && typeof c.text === 'string' ? c.text : '')).join(' ').trim();
    if (text) return text.slice(0, 500);
  }
  return JSON.stringify(content).slice(0, 500);
}
