// runtime/: McpConnector, the contract src/mcp implements with the MCP SDK (docs/mcp.md).
// Must not import the execution or speak the protocol: it is the seam between the engine and src/mcp.
import type { Json } from '../../journal/run.js';
import type { McpServerRecord } from '../../store/store.js';

export type { McpSecretRef, McpServerRecord, McpToolRule, McpTransport } from '../../store/store.js';

/** One tool as a server lists it. */
export interface McpToolListing {
  name: string;
  description: string;
  inputSchema: Json;
  /** The tool's MCP annotations (readOnlyHint, destructiveHint, idempotentHint, …); null when none. */
  annotations: Json | null;
  /** The tool's `execution.taskSupport` when it may run as an MCP task (docs/mcp.md "Tasks"); absent otherwise. */
  taskSupport?: 'optional' | 'required';
}

/** A task the server created for a tools/call: what the call's effect journals, so a resume awaits it instead of calling again. */
export interface McpTaskHandle {
  taskId: string;
  /** The status the server gave when it created the task. */
  status: string;
}

/** The answer sent back to a task's question (elicitation/create): accepted with the form's fields, or declined. */
export type McpTaskAnswer = { action: 'accept'; content: Record<string, Json> } | { action: 'decline' };

/** What awaiting a task gave: the tool's result, or the question the task waits on (input_required). */
export type McpTaskOutcome = { result: Json } | { inputRequired: { message: string; requestedSchema: Json } };

/** How one replica last reached one MCP server. */
export interface McpServerHealth {
  /** `ok`: the last connect or request got an answer; `unreachable`: it failed at the transport. */
  state: 'ok' | 'unreachable';
  lastSuccessAt: Date | null;
  lastError: string | null;
  lastErrorAt: Date | null;
  /** Transport failures since the last success. */
  consecutiveFailures: number;
  /** While unreachable: no new connection is tried before this time (the reconnect backoff). */
  nextAttemptAt: Date | null;
  /** The replica this view is from. */
  replica: string;
}

/** What a replica does with MCP servers; src/mcp implements it with the MCP SDK. */
export interface McpConnector {
  /** The registration of `name` in `namespace`, or null. */
  server(namespace: string, name: string): Promise<McpServerRecord | null>;
  /** Every tool the server lists (all pages). */
  listTools(server: McpServerRecord, signal: AbortSignal): Promise<McpToolListing[]>;
  /**
   * Calls a tool once, sending `idempotencyKey` in the request's `_meta` (and, over HTTP, as the
   * Idempotency-Key header), and `traceparent` (the attempt's span when the replica traces) in `_meta`
   * as the MCP semantic conventions of OpenTelemetry propagate trace context. A result the server marks `isError` is thrown as a non-retryable error;
   * a transport failure is thrown as itself (retried with the call's policy).
   */
  callTool(params: { server: McpServerRecord; tool: string; args: Json; idempotencyKey: string; signal: AbortSignal; traceparent?: string | null; task?: boolean }): Promise<Json>;
  /**
   * With `task` (a tool whose pin says it supports tasks) on a server that supports tasks for
   * tools/call, callTool asks for a task and returns `{ mcpTask: McpTaskHandle }` once the server
   * created it. awaitTask then waits for that task's result (tasks/result), first delivering
   * `answer` to the task's pending question (once per `round`, the await's count of questions
   * answered); it returns the question instead when the task asks one.
   */
  awaitTask(params: { server: McpServerRecord; taskId: string; round: number; answer: McpTaskAnswer | null; signal: AbortSignal }): Promise<McpTaskOutcome>;
  /** This replica's view of its connection to a server (docs/mcp.md "Connections and health"); null before any attempt. */
  health(namespace: string, name: string): McpServerHealth | null;
  /** Closes every connection (the replica is stopping). */
  close(): Promise<void>;
}

