import { Code, type CallOptions as ConnectCallOptions } from '@connectrpc/connect';
import { toWaymarkError, Unavailable, WaymarkError } from './errors.js';

/*
 * The clients' shared retry policy (docs/clients.md "Retries of unary calls"): which failures are
 * retried, the backoff between attempts, and the budget and deadline that bound them.
 */

/** Backoff and budgets, per client (ClientOptions.retry) and per call (CallOptions.retry). */
export interface RetryPolicy {
  /** Delay before the first retry or reconnect (default 100 ms); doubles each time. */
  initialMs: number;
  /** Largest delay (default 5 000 ms). Each wait is uniform in [0, delay] (full jitter). */
  maxMs: number;
  /** No retry of a unary call starts later than this after its first attempt (default 60 000 ms). */
  budgetMs: number;
  /**
   * An event stream gives up when, for this long, no reconnect succeeded and no event arrived
   * (default 120 000 ms).
   */
  streamGiveUpMs: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = { initialMs: 100, maxMs: 5_000, budgetMs: 60_000, streamGiveUpMs: 120_000 };

/**
 * Which failures a call may be repeated after: `safe` calls on any retryable failure, `unsent`
 * calls (ResumeRun with invalidate or RESTART) only when the server never saw the request.
 */
export type RetryMode = 'safe' | 'unsent';

/** Whether `err` may be retried by a call of `mode`. */
export function isRetryable(err: WaymarkError, mode: RetryMode): boolean {
  if (err instanceof Unavailable) return mode === 'safe' || err.kind === 'not_sent';
  return mode === 'safe' && err.code === Code.ResourceExhausted && err.retryDelayMs !== undefined;
}

/** The wait before retry number `retry` (1 = the first): full jitter, at least the server's RetryInfo. */
export function backoffMs(retry: number, policy: Pick<RetryPolicy, 'initialMs' | 'maxMs'>, err?: WaymarkError): number {
  const ceiling = Math.min(policy.initialMs * 2 ** Math.min(retry - 1, 30), policy.maxMs);
  return Math.max(Math.random() * ceiling, err?.retryDelayMs ?? 0);
}

/** What one logical call runs under. */
export interface Attempts {
  mode: RetryMode;
  policy: RetryPolicy;
  /** Deadline of each attempt when the call has none of its own. */
  attemptTimeoutMs: number;
  /** The call's own deadline (all attempts), in ms from now. */
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
  /** false: one attempt only. */
  retry: boolean;
}

/**
 * Runs `fn` until it succeeds, fails with something not retryable, or the budget or the call's
 * deadline leaves no room for another attempt; throws the typed error. `fn` gets the attempt
 * number (1, 2, ...) and the Connect options for that attempt. An abort of `signal` rejects with
 * its reason, as fetch does.
 */
export async function withRetries<T>(a: Attempts, fn: (attempt: number, options: ConnectCallOptions) => Promise<T>): Promise<T> {
  const started = Date.now();
  const deadline = a.timeoutMs !== undefined ? started + a.timeoutMs : undefined;
  for (let attempt = 1; ; attempt++) {
    a.signal?.throwIfAborted();
    const left = deadline === undefined ? a.attemptTimeoutMs : deadline - Date.now();
    if (left <= 0) throw new WaymarkError(Code.DeadlineExceeded, `the call did not complete within its timeoutMs (${a.timeoutMs} ms)`);
    let error: WaymarkError;
    try {
      return await fn(attempt, { timeoutMs: left, ...(a.signal ? { signal: a.signal } : {}) });
    } catch (err) {
      if (a.signal?.aborted) throw a.signal.reason;
      error = toWaymarkError(err);
    }
    if (!a.retry || !isRetryable(error, a.mode)) throw error;
    const wait = backoffMs(attempt, a.policy, error);
    const at = Date.now() + wait;
    if (at - started > a.policy.budgetMs || (deadline !== undefined && at >= deadline)) throw error;
    await sleep(wait, a.signal);
  }
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
