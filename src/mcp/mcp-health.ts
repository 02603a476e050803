import { setTimeout as delay } from 'node:timers/promises';
import type { McpServerHealth } from '../engine/index.js';

/*
 * What a replica knows of its connections to MCP servers (docs/mcp.md "Connections and health"):
 * per server, the last answer and the last transport failure, and after failures a reconnect
 * backoff. A connection that failed is not tried again before its backoff has passed; a call that
 * comes sooner waits for it (bounded by the call's own signal, so by its timeout) instead of
 * failing at once, so every attempt the engine journals is a real one, and a server that is down
 * is not hammered by every run that calls it. The view is this replica's: each replica keeps its
 * own connections.
 */

export const MCP_RECONNECT_DEFAULTS = {
  /** The backoff after the first failure. */
  initialMs: 500,
  /** Each further failure multiplies it. */
  coefficient: 2,
  maxMs: 30_000,
} as const;

export interface McpHealthOptions {
  replica: string;
  now?: () => number;
  /** Waits `ms` unless `signal` aborts first (tests pass one that needs no real time). */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  reconnect?: Partial<typeof MCP_RECONNECT_DEFAULTS>;
}

interface Book {
  lastSuccessAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  failures: number;
  notBefore: number | null;
}

export class McpHealth {
  private readonly books = new Map<string, Book>();
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private readonly reconnect: typeof MCP_RECONNECT_DEFAULTS;

  constructor(private readonly options: McpHealthOptions) {
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms, signal) => delay(ms, undefined, { signal }));
    this.reconnect = { ...MCP_RECONNECT_DEFAULTS, ...options.reconnect };
  }

  /** Waits until a new connection to the server may be tried (at once when none failed). */
  async gate(namespace: string, name: string, signal: AbortSignal): Promise<void> {
    const notBefore = this.books.get(key(namespace, name))?.notBefore ?? null;
    const wait = notBefore === null ? 0 : notBefore - this.now();
    if (wait > 0) await this.sleep(wait, signal);
  }

  succeeded(namespace: string, name: string): void {
    const book = this.book(namespace, name);
    book.lastSuccessAt = this.now();
    book.failures = 0;
    book.notBefore = null;
  }

  failed(namespace: string, name: string, error: unknown): void {
    const book = this.book(namespace, name);
    const at = this.now();
    book.lastError = error instanceof Error ? describe(error) : String(error);
    book.lastErrorAt = at;
    book.failures += 1;
    const { initialMs, coefficient, maxMs } = this.reconnect;
    book.notBefore = at + Math.min(maxMs, initialMs * coefficient ** (book.failures - 1));
  }

  view(namespace: string, name: string): McpServerHealth | null {
    const book = this.books.get(key(namespace, name));
    if (!book) return null;
    const date = (ms: number | null) => (ms === null ? null : new Date(ms));
    return {
      state: book.failures > 0 ? 'unreachable' : 'ok',
      lastSuccessAt: date(book.lastSuccessAt),
      lastError: book.lastError,
      lastErrorAt: date(book.lastErrorAt),
      consecutiveFailures: book.failures,
      nextAttemptAt: book.failures > 0 ? date(book.notBefore) : null,
      replica: this.options.replica,
    };
  }

  private book(namespace: string, name: string): Book {
    let book = this.books.get(key(namespace, name));
    if (!book) this.books.set(key(namespace, name), (book = { lastSuccessAt: null, lastError: null, lastErrorAt: null, failures: 0, notBefore: null }));
    return book;
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}\u0000${name}`;
}

/** fetch's "fetch failed" says nothing; its cause (ECONNREFUSED 127.0.0.1:4000) does. */
function describe(error: Error): string {
  const cause = (error as { cause?: unknown }).cause;
  const why = cause instanceof Error ? `: ${cause.message}` : '';
  return `${error.message}${why}`.slice(0, 500);
}
