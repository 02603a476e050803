// author/: retry policies (RetryOptions, defaults per kind, backoff, which failures retry), pure.
// Must not import runtime/ or touch a store or clock: runtime/effect-runner.ts journals what these decide.
import type { Json, RunError } from '../../journal/run.js';
import { durationMs, type Duration } from './duration.js';
import type { FieldViolation } from '../errors.js';

/*
 * Retry policies (docs/workflows.md "Retries and timeouts"), as pure functions: which failures are
 * retried, how long the backoff before the next attempt is, and what a backoff timer records. No
 * store, no clock: effect-runner.ts journals the attempts and timers these decide.
 */

/** What a workflow author writes: every field optional, durations as text or milliseconds. */
export interface RetryOptions {
  /** Attempts in all, the first included: 1 = no retry, Infinity = until it succeeds. */
  maxAttempts?: number;
  /** The wait before the second attempt (default 1s). */
  initialInterval?: Duration;
  /** Each wait is the previous one times this, >= 1 (default 2). */
  backoffCoefficient?: number;
  /** No wait is longer than this (default 60s). */
  maxInterval?: Duration;
  /** Error names (`err.name`) that fail at once. */
  nonRetryable?: readonly string[];
}

/** How one failure is classified; a kind may supply its own (model calls retry transient errors only). */
export interface FailureClass {
  retryable: boolean;
  /** A lower bound on the next wait (Retry-After), or null. */
  retryAfterMs: number | null;
}

export interface RetryPolicy {
  maxAttempts: number;
  initialIntervalMs: number;
  backoffCoefficient: number;
  maxIntervalMs: number;
  nonRetryable: ReadonlySet<string>;
  /** Kind-specific classification, applied after the rules every kind shares. */
  classify: ((error: unknown) => FailureClass) | null;
}

/** The shape every kind's default starts from. */
const BASE = { initialIntervalMs: 1_000, backoffCoefficient: 2, maxIntervalMs: 60_000 } as const;

/** Steps run the author's own code: no retry unless asked (as DBOS steps). */
export const STEP_RETRY_DEFAULT: RetryPolicy = Object.freeze({ ...BASE, maxAttempts: 1, nonRetryable: new Set<string>(), classify: null });
/** Tools and model calls: bounded retries, so a broken dependency surfaces within seconds, not never. */
export const TOOL_RETRY_DEFAULT: RetryPolicy = Object.freeze({ ...BASE, maxAttempts: 3, nonRetryable: new Set<string>(), classify: null });
export const MODEL_RETRY_DEFAULT: RetryPolicy = TOOL_RETRY_DEFAULT;

/** Errors no policy retries: the engine's refusals and decisions, which would fail the same way again. */
const NEVER_RETRIED = new Set([
  'NonRetryableError', 'ToolApprovalDeniedError', 'InvalidInputError', 'NotJsonError', 'PayloadTooLargeError',
  'UnstorableValueError', 'JournalFullError', 'BudgetExceededError', 'ModelPriceMissingError',
]);

/**
 * The policy of a call: `options` over the kind's `base`. Returns the violations instead when an
 * option is out of range (the caller raises its DefinitionError or InvalidInputError).
 */
export function retryPolicy(base: RetryPolicy, options: RetryOptions | undefined, classify?: RetryPolicy['classify']): RetryPolicy | FieldViolation[] {
  if (options === undefined) return classify === undefined ? base : { ...base, classify };
  const violations: FieldViolation[] = [];
  if (options === null || typeof options !== 'object') return [{ field: 'retry', description: 'must be an object { maxAttempts, initialInterval, backoffCoefficient, maxInterval, nonRetryable }' }];
  const maxAttempts = options.maxAttempts ?? base.maxAttempts;
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    violations.push({ field: 'retry.maxAttempts', description: 'must be a whole number >= 1 (1 = no retry), or Infinity' });
  }
  const interval = (field: string, value: Duration | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    try {
      const ms = durationMs(value);
      if (ms >= 1) return ms;
      violations.push({ field, description: 'must be at least 1ms' });
    } catch (error) {
      violations.push({ field, description: (error as Error).message });
    }
    return fallback;
  };
  const initialIntervalMs = interval('retry.initialInterval', options.initialInterval, base.initialIntervalMs);
  const maxIntervalMs = interval('retry.maxInterval', options.maxInterval, Math.max(base.maxIntervalMs, initialIntervalMs));
  if (maxIntervalMs < initialIntervalMs) violations.push({ field: 'retry.maxInterval', description: 'must not be shorter than initialInterval' });
  const backoffCoefficient = options.backoffCoefficient ?? base.backoffCoefficient;
  if (!(Number.isFinite(backoffCoefficient) && backoffCoefficient >= 1)) {
    violations.push({ field: 'retry.backoffCoefficient', description: 'must be a finite number >= 1' });
  }
  const names = options.nonRetryable ?? [];
  if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || n.length === 0)) {
    violations.push({ field: 'retry.nonRetryable', description: 'must be a list of error names' });
  }
  if (violations.length > 0) return violations;
  return {
    maxAttempts, initialIntervalMs, backoffCoefficient, maxIntervalMs,
    nonRetryable: new Set([...base.nonRetryable, ...names]), classify: classify === undefined ? base.classify : classify,
  };
}

/** Whether `error` may be retried under `policy`, and the least wait it asks for. */
export function classifyFailure(policy: RetryPolicy, error: unknown): FailureClass {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as { name?: unknown; nonRetryable?: unknown; retryAfterMs?: unknown };
  const name = typeof fields.name === 'string' ? fields.name : '';
  if (fields.nonRetryable === true || NEVER_RETRIED.has(name) || policy.nonRetryable.has(name)) return { retryable: false, retryAfterMs: null };
  const own = typeof fields.retryAfterMs === 'number' && Number.isFinite(fields.retryAfterMs) && fields.retryAfterMs >= 0 ? fields.retryAfterMs : null;
  if (!policy.classify) return { retryable: true, retryAfterMs: own };
  const decided = policy.classify(error);
  return { retryable: decided.retryable, retryAfterMs: decided.retryAfterMs ?? own };
}

/** The wait after attempt `failed` (1-based): initial × coefficient^(failed-1), capped, and at least Retry-After. */
export function backoffMs(policy: RetryPolicy, failed: number, retryAfterMs: number | null): number {
  const grown = policy.initialIntervalMs * policy.backoffCoefficient ** (failed - 1);
  const capped = Math.min(policy.maxIntervalMs, Number.isFinite(grown) ? grown : policy.maxIntervalMs);
  return Math.round(Math.max(capped, retryAfterMs ?? 0));
}

/** The `Retry-After` header (seconds or an HTTP date) in ms from `now`, or null. */
export function retryAfterHeaderMs(value: string | null | undefined, now: number = Date.now()): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The suspended entry's payload of a backoff timer (docs/journal.md "Retries"). */
export function retryTimerPayload(p: { kind: string; name: string; attempt: number; maxAttempts: number; delayMs: number; deadlineAt: Date; schema: Json; schemaHash: string }): Json {
  const of = p.maxAttempts === Infinity ? '' : ` of ${p.maxAttempts}`;
  return {
    key: 'retry',
    title: `retry ${p.kind} "${p.name}": attempt ${p.attempt}${of}`,
    attempt: p.attempt,
    maxAttempts: p.maxAttempts === Infinity ? null : p.maxAttempts,
    delayMs: p.delayMs,
    deadlineAt: p.deadlineAt.toISOString(),
    onTimeout: {},
    schema: p.schema,
    schemaHash: p.schemaHash,
  };
}

/** Whether a suspended entry is a backoff timer (its payload's key is `retry`). */
export function isRetryTimer(entry: { status: string; payload: Json | null }): boolean {
  return entry.status === 'suspended' && typeof entry.payload === 'object' && entry.payload !== null && !Array.isArray(entry.payload) && entry.payload.key === 'retry';
}

/** The `details` of a RetriesExhaustedError record. */
export interface ExhaustedDetails {
  effectKind: string;
  effectName: string;
  attempts: number;
  lastError: RunError;
}
