import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import pino, { type Logger } from 'pino';
import type { McpConnector, McpServerHealth, McpTaskAnswer, McpTaskOutcome, McpToolListing } from '../engine/index.js';
import type { Json } from '../journal/run.js';
import type { JournalStore, McpServerRecord } from '../store/store.js';
import { McpTaskLostError, McpToolError } from './mcp-tool-error.js';
import { McpTaskQuestions } from './mcp-task-questions.js';
import { McpHealth, type McpHealthOptions } from './mcp-health.js';
import { resolvedHeaders, type McpSecretSource } from './mcp-secret-refs.js';
import {
  CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, ErrorCode, McpError, type CallToolResult, type ElicitResult, type Task,
} from '@modelcontextprotocol/sdk/types.js';

/*
 * The replica's MCP client (docs/mcp.md), on the MCP SDK's Client: one connection per registered
 * server and registration content, opened on first use and dropped after a transport failure (the
 * next attempt, under the call's retry policy, reconnects). The engine journals each call; this
 * file only speaks to servers.
 */

/** The `_meta` field of a tools/call request that carries the effect's idempotency key. */
export const IDEMPOTENCY_META_KEY = 'dev.waymark/idempotency-key';
/** The header a Streamable HTTP request of a tools/call carries it in. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/**
 * The SDK's own per-request timeout (60s by default) is replaced by the call's: the engine aborts
 * the request's signal at the tool's timeout, so the SDK's is set as far as a timer goes.
 */
const NO_SDK_TIMEOUT = 2_147_483_647;
/** How long a server is asked to keep a task (and its result) after creating it: a run may park on its question for a day. */
export const MCP_TASK_TTL_MS = 86_400_000;

/** The key of the tools/call being sent, for the HTTP transport's fetch (which sees only the request). */
const sending = new AsyncLocalStorage<string>();

export interface SdkMcpConnectorOptions {
  store: JournalStore;
  logger?: Logger;
  /** What servers see in `initialize` (default waymark). */
  clientName?: string;
  /** The replica's holder id, named in health views (default `this-replica`). */
  replica?: string;
  /** The clock, sleep and reconnect backoff of the health book (mcp-health.ts). */
  health?: Omit<McpHealthOptions, 'replica'>;
  /** Where header references are read (mcp-secret-refs.ts); default: this process's environment. */
  secrets?: McpSecretSource;
}

export class SdkMcpConnector implements McpConnector {
  private readonly clients = new Map<string, Promise<Client>>();
  private readonly logger: Logger;
  private readonly healthBook: McpHealth;
  private readonly questions = new McpTaskQuestions({ idleMs: MCP_TASK_TTL_MS });
  private closed = false;

  constructor(private readonly options: SdkMcpConnectorOptions) {
    this.logger = options.logger ?? pino({ enabled: false });
    this.healthBook = new McpHealth({ replica: options.replica ?? 'this-replica', ...options.health });
  }

  health(namespace: string, name: string): McpServerHealth | null {
    return this.healthBook.view(namespace, name);
  }

  server(namespace: string, name: string): Promise<McpServerRecord | null> {
    return this.options.store.mcpServerGet({ namespace, name });
  }

  async listTools(server: McpServerRecord, signal: AbortSignal): Promise<McpToolListing[]> {
    return this.using(server, signal, async (client) => {
      const tools: McpToolListing[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor }, { signal, timeout: NO_SDK_TIMEOUT });
        for (const t of page.tools) {
          tools.push({
            name: t.name,
            description: t.description ?? '',
            inputSchema: plain(t.inputSchema),
            annotations: t.annotations ? plain(t.annotations) : null,
            ...(t.execution?.taskSupport === 'optional' || t.execution?.taskSupport === 'required' ? { taskSupport: t.execution.taskSupport } : {}),
          });
        }
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  async callTool(params: { server: McpServerRecord; tool: string; args: Json; idempotencyKey: string; signal: AbortSignal; traceparent?: string | null; task?: boolean }): Promise<Json> {
    const { server, tool, args, idempotencyKey, signal, traceparent } = params;
    const meta = { [IDEMPOTENCY_META_KEY]: idempotencyKey, ...(traceparent ? { traceparent } : {}) };
    const request = { name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: meta };
    const result = await this.using(server, signal, (client) => sending.run(idempotencyKey, async (): Promise<{ task: Task } | { result: CallToolResult }> => {
      // A task-augmented call (docs/mcp.md "Tasks") when the pin says the tool supports tasks and the server takes them for tools/call.
      if (params.task && client.getServerCapabilities()?.tasks?.requests?.tools?.call) {
        const created = await client.request({ method: 'tools/call', params: request }, CreateTaskResultSchema, { signal, timeout: NO_SDK_TIMEOUT, task: { ttl: MCP_TASK_TTL_MS } });
        return { task: created.task };
      }
      return { result: (await client.callTool(request, undefined, { signal, timeout: NO_SDK_TIMEOUT })) as CallToolResult };
    }));
    if ('task' in result) return { mcpTask: { taskId: result.task.taskId, status: result.task.status } };
    return toolResult(`${server.name}.${tool}`, result.result);
  }

  async awaitTask(params: { server: McpServerRecord; taskId: string; round: number; answer: McpTaskAnswer | null; signal: AbortSignal }): Promise<McpTaskOutcome> {
    const { server, taskId, signal } = params;
    return this.using(server, signal, async (client) => {
      const listening = this.questions.listen(serverKey(server), taskId, params.round, params.answer);
      // Its own signal too: a question ends this await (the run parks on it) without failing it.
      const asked = new AbortController();
      try {
        const result = client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, { signal: AbortSignal.any([signal, asked.signal]), timeout: NO_SDK_TIMEOUT });
        const first = await Promise.race([result.then((r) => ({ r })), listening.question.then((q) => ({ q }))]);
        if ('q' in first) {
          result.catch(() => undefined);
          asked.abort(new Error('the task asked a question; the run waits for its answer'));
          return { inputRequired: first.q };
        }
        listening.finished();
        return { result: toolResult(`${server.name} task ${taskId}`, first.r) };
      } catch (error) {
        // The SDK's own task store answers InvalidParams for a task it does not have (expired, or bound to another session).
        if (error instanceof McpError && error.code === ErrorCode.InvalidParams && /task not found/i.test(error.message)) {
          listening.finished();
          throw new McpTaskLostError(server.name, taskId, error.message);
        }
        throw error;
      } finally {
        listening.close();
      }
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map(async (c) => (await c.catch(() => null))?.close().catch(() => undefined)));
  }

  /**
   * Runs `fn` on the server's connection, opening one if there is none (no sooner than the
   * server's reconnect backoff, mcp-health.ts). A transport failure drops the connection and counts
   * against the server's health; an answer, a tool's error included, counts for it.
   */
  private async using<T>(server: McpServerRecord, signal: AbortSignal, fn: (client: Client) => Promise<T>): Promise<T> {
    if (this.closed) throw new Error('the MCP connector is closed (the replica is stopping)');
    const { namespace, name } = server;
    const key = JSON.stringify([namespace, name, server.transport]);
    let connecting = this.clients.get(key);
    if (!connecting) {
      // Read before the gate: a missing secret is the replica's configuration, not the server's health.
      const headers = await resolvedHeaders(server, this.options.secrets ?? { env: process.env });
      await this.healthBook.gate(namespace, name, signal);
      connecting = this.clients.get(key) ?? this.connect(server, headers, () => this.clients.delete(key));
      this.clients.set(key, connecting);
    }
    let client: Client;
    try {
      client = await connecting;
    } catch (error) {
      if (this.clients.get(key) === connecting) this.clients.delete(key);
      if (!signal.aborted) this.healthBook.failed(namespace, name, error);
      throw error;
    }
    try {
      const result = await fn(client);
      this.healthBook.succeeded(namespace, name);
      return result;
    } catch (error) {
      if (error instanceof McpToolError || error instanceof McpTaskLostError || answered(error)) {
        this.healthBook.succeeded(namespace, name);
        throw error;
      }
      if (this.clients.get(key) === connecting) {
        this.clients.delete(key);
        void client.close().catch(() => undefined);
      }
      if (!signal.aborted) this.healthBook.failed(namespace, name, error);
      throw error;
    }
  }

  private async connect(server: McpServerRecord, headers: Record<string, string>, onClose: () => void): Promise<Client> {
    // Elicitation (form mode) is advertised for the questions of MCP tasks only; any other is declined (mcp-task-questions.ts).
    const client = new Client({ name: this.options.clientName ?? 'waymark', version: '0.1.0' }, { capabilities: { elicitation: { form: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => (await this.questions.ask(serverKey(server), request.params)) as ElicitResult);
    client.onclose = onClose;
    client.onerror = (error) => this.logger.warn({ server: server.name, namespace: server.namespace, err: error }, 'MCP connection error');
    await client.connect(transportOf(server, headers));
    this.logger.info({ server: server.name, namespace: server.namespace, transport: server.transport.kind }, 'MCP server connected');
    return client;
  }
}

/** `headers`: the registration's, its references read (resolvedHeaders). */
function transportOf(server: McpServerRecord, headers: Record<string, string>): Transport {
  const t = server.transport;
  if (t.kind === 'stdio') {
    return new StdioClientTransport({ command: t.command, args: t.args, env: { ...getDefaultEnvironment(), ...t.env }, stderr: 'inherit' });
  }
  return new StreamableHTTPClientTransport(new URL(t.url), {
    requestInit: { headers },
    // The key of the tools/call being sent also travels as a header, for servers (and proxies) that dedupe on it.
    fetch: (url, init) => {
      const key = sending.getStore();
      if (key === undefined) return fetch(url, init);
      const headers = new Headers(init?.headers);
      headers.set(IDEMPOTENCY_HEADER, key);
      return fetch(url, { ...init, headers });
    },
  });
}

/** A tools/call (or task) result as journaled: `{ content, structuredContent? }`; `isError` is thrown as McpToolError. */
function toolResult(tool: string, result: { content?: unknown; structuredContent?: unknown; isError?: unknown }): Json {
  const content = plain(result.content ?? []);
  if (result.isError === true) throw new McpToolError(tool, content);
  return result.structuredContent !== undefined ? { content, structuredContent: plain(result.structuredContent) } : { content };
}

function serverKey(server: McpServerRecord): string {
  return `${server.namespace}\u0000${server.name}`;
}

/** A JSON-RPC error the server sent (bad params, an unknown tool): it answered; a lost connection or a timeout is no answer. */
function answered(error: unknown): boolean {
  return error instanceof McpError && error.code !== ErrorCode.ConnectionClosed && error.code !== ErrorCode.RequestTimeout;
}

/** A value from the SDK as plain JSON (what the journal stores). */
function plain(value: unknown): Json {
  return JSON.parse(JSON.stringify(value ?? null)) as Json;
}
