import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import pino, { type Logger } from 'pino';
import type { McpConnector, McpServerHealth, McpToolListing } from '../engine/index.js';
import type { Json } from '../journal/run.js';
import type { JournalStore, McpServerRecord } from '../store/store.js';
import { McpToolError } from './mcp-tool-error.js';
import { McpHealth, type McpHealthOptions } from './mcp-health.js';
import { resolvedHeaders, type McpSecretSource } from './mcp-secret-refs.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

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
          });
        }
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  async callTool(params: { server: McpServerRecord; tool: string; args: Json; idempotencyKey: string; signal: AbortSignal; traceparent?: string | null }): Promise<Json> {
    const { server, tool, args, idempotencyKey, signal, traceparent } = params;
    const meta = { [IDEMPOTENCY_META_KEY]: idempotencyKey, ...(traceparent ? { traceparent } : {}) };
    const result = await this.using(server, signal, (client) => sending.run(idempotencyKey, () => client.callTool(
      { name: tool, arguments: (args ?? {}) as Record<string, unknown>, _meta: meta },
      undefined,
      { signal, timeout: NO_SDK_TIMEOUT },
    )));
    const content = plain(result.content ?? []);
    if (result.isError === true) throw new McpToolError(`${server.name}.${tool}`, content);
    return result.structuredContent !== undefined ? { content, structuredContent: plain(result.structuredContent) } : { content };
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
      if (error instanceof McpToolError || answered(error)) {
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
    const client = new Client({ name: this.options.clientName ?? 'waymark', version: '0.1.0' });
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

/** A JSON-RPC error the server sent (bad params, an unknown tool): it answered; a lost connection or a timeout is no answer. */
function answered(error: unknown): boolean {
  return error instanceof McpError && error.code !== ErrorCode.ConnectionClosed && error.code !== ErrorCode.RequestTimeout;
}

/** A value from the SDK as plain JSON (what the journal stores). */
function plain(value: unknown): Json {
  return JSON.parse(JSON.stringify(value ?? null)) as Json;
}
