// author/: the built-in tools every server registers (`http`, `echo`), written with defineTool.
// Must not reach into the journal or the runtime: a tool sees its arguments and its StepInfo only.
import { z } from 'zod';
import type { Json } from '../../journal/run.js';
import { WaymarkError } from '../../journal/errors.js';
import { retryAfterHeaderMs } from './retry.js';
import { defineTool, type Tool } from './tool.js';

/*
 * Tools every server has, so users of the Go and Python clients can do useful work without
 * writing TypeScript (DESIGN "Users' own workflows and tools").
 */

const READ_ONLY_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Response headers worth journaling; the rest (cookies, dates, server banners) are noise or secrets. */
const KEPT_HEADERS = ['content-type', 'content-length', 'etag', 'last-modified', 'location', 'retry-after', 'idempotency-key'];
/** Statuses the `http` tool retries (with the tool's policy): the server may answer otherwise later. */
const RETRIED_STATUSES = new Set([408, 429]);
/** How much of a failed response's body its error keeps. */
const ERROR_BODY_CHARS = 1000;

/**
 * A response the `http` tool treats as a failed attempt: 5xx, 408 or 429. Retried under the
 * tool's policy, no sooner than the response's `Retry-After`; when the attempts run out the
 * workflow gets RetriesExhaustedError with this as the last cause. Other statuses are results.
 */
export class HttpStatusError extends WaymarkError {
  readonly reason = 'HTTP_STATUS';
  override readonly retryable = true;
  constructor(readonly status: number, readonly url: string, readonly retryAfterMs: number | null, readonly body: string) {
    super(`${url} answered HTTP ${status}${retryAfterMs !== null ? ` (Retry-After ${retryAfterMs}ms)` : ''}; it is retried with the tool's policy`);
  }
}

/**
 * The signal of one request: aborted with the effect's `signal` (long-lived: the execution's) or
 * after `timeoutMs`. Unlike AbortSignal.any, it stops listening to `signal` once `release`d, so
 * requests do not pile up on the execution's signal.
 */
function requestSignal(signal: AbortSignal, timeoutMs: number): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  const timeout = AbortSignal.timeout(timeoutMs);
  const fromSignal = (): void => controller.abort(signal.reason);
  const fromTimeout = (): void => controller.abort(timeout.reason);
  if (signal.aborted) fromSignal();
  signal.addEventListener('abort', fromSignal, { once: true });
  timeout.addEventListener('abort', fromTimeout, { once: true });
  return {
    signal: controller.signal,
    release: () => {
      signal.removeEventListener('abort', fromSignal);
      timeout.removeEventListener('abort', fromTimeout);
    },
  };
}

export const httpTool = defineTool({
  name: 'http',
  description: 'Makes an HTTP request and returns { status, headers, body }. The effect\'s idempotency key is sent as the Idempotency-Key header. GET and HEAD are read-only; other methods are mutating.',
  input: z.object({
    url: z.url(),
    method: z.enum(['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
    headers: z.record(z.string(), z.string()).default({}),
    /** Sent as JSON (with content-type application/json unless given), or as is when a string. */
    body: z.json().optional(),
    timeoutMs: z.number().int().positive().max(300_000).default(30_000),
  }),
  mutating: (args) => !READ_ONLY_METHODS.has(args.method),
  async execute(args, { idempotencyKey, signal, traceparent }) {
    const headers = new Headers(args.headers);
    headers.set('Idempotency-Key', idempotencyKey);
    // The attempt's span when the server traces (docs/tracing.md): the receiver's spans join the run's trace.
    if (traceparent) headers.set('traceparent', traceparent);
    let body: string | undefined;
    if (args.body !== undefined && args.method !== 'GET' && args.method !== 'HEAD') {
      if (typeof args.body === 'string') body = args.body;
      else {
        body = JSON.stringify(args.body);
        if (!headers.has('content-type')) headers.set('content-type', 'application/json');
      }
    }
    const request = requestSignal(signal, args.timeoutMs);
    let response: Response;
    let text: string;
    try {
      response = await fetch(args.url, { method: args.method, headers, body, signal: request.signal });
      text = await response.text();
    } finally {
      request.release();
    }
    if (response.status >= 500 || RETRIED_STATUSES.has(response.status)) {
      throw new HttpStatusError(response.status, args.url, retryAfterHeaderMs(response.headers.get('retry-after')), text.slice(0, ERROR_BODY_CHARS));
    }
    const kept: Record<string, string> = {};
    for (const name of KEPT_HEADERS) {
      const value = response.headers.get(name);
      if (value !== null) kept[name] = value;
    }
    let parsed: Json = text;
    if ((response.headers.get('content-type') ?? '').includes('json') && text.length > 0) {
      try {
        parsed = JSON.parse(text) as Json;
      } catch {
        parsed = text;
      }
    }
    return { status: response.status, ok: response.ok, headers: kept, body: parsed };
  },
});

export const echoTool = defineTool({
  name: 'echo',
  description: 'Returns its input unchanged. Useful to test a client or mark a point in a run.',
  input: z.json(),
  mutating: false,
  execute: (args) => args as Json,
});

export function builtinTools(): Tool[] {
  return [httpTool as Tool, echoTool as Tool];
}
