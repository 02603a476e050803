import { APICallError, RetryError } from 'ai';
import type { FailureClass } from '../engine/index.js';
import { retryAfterHeaderMs } from '../engine/index.js';

/*
 * Which model-call failures the engine's durable retry repeats (docs/workflows.md "Retries and
 * timeouts"): what the AI SDK marks retryable (408, 409, 429, 5xx, and connection failures, which
 * it reports as APICallError too), and a request that timed out. A bad request, a wrong key or a
 * response the SDK cannot parse fails at once. Retry-After (or OpenAI's retry-after-ms) is the
 * least wait before the next attempt.
 */

export function classifyModelFailure(error: unknown): FailureClass {
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  if (APICallError.isInstance(cause)) {
    const headers = lowerCased(cause.responseHeaders);
    const ms = Number(headers['retry-after-ms']);
    const retryAfterMs = Number.isFinite(ms) && ms >= 0 ? ms : retryAfterHeaderMs(headers['retry-after']);
    return { retryable: cause.isRetryable, retryAfterMs };
  }
  const name = cause instanceof Error ? cause.name : '';
  // The request outlived its time (the runtime's timeout, or the call's own): try again.
  return { retryable: name === 'TimeoutError' || name === 'EffectTimeoutError', retryAfterMs: null };
}

function lowerCased(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) out[k.toLowerCase()] = v;
  return out;
}
