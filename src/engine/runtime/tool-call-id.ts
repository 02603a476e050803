// runtime/: the id a model gave the tool call ctx.agent is executing, for its effect's span (docs/tracing.md).
// Must not reach the journal: the id is the model's, not part of the call's identity or key.
import { AsyncLocalStorage } from 'node:async_hooks';

const current = new AsyncLocalStorage<string>();

/** Runs `fn` (the agent host's ctx.tool call for one of the model's tool calls) with the model's id for it. */
export function withToolCallId<T>(toolCallId: string | undefined, fn: () => Promise<T>): Promise<T> {
  return toolCallId ? current.run(toolCallId, fn) : fn();
}

/** The model's id of the tool call being made here; undefined outside an agent's tool call. */
export function currentToolCallId(): string | undefined {
  return current.getStore();
}
