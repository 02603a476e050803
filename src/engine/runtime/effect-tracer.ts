// runtime/: EffectTracer, what the engine tells a tracer about the effects it runs live and the remote tasks it settles.
// Must not import a telemetry library: the composition root implements this (src/cli/effect-tracing.ts, over OpenTelemetry).
import type { EntryKind, Usage } from '../../journal/journal-entry.js';

/*
 * Spans per effect (docs/tracing.md) without OpenTelemetry in the engine: effect-runner.ts calls
 * `effectStarted` when an attempt of a journaled effect starts live (never for an effect the
 * journal answers, so a replay makes no span), runs the attempt `within` the span it got back,
 * and `ended` it once the attempt settled. Remote tools are suspensions, not attempts here: the
 * worker's task has its own span, made when its result comes back (worker-tasks.ts), whose id is
 * known when the task is handed out, so the worker receives its `traceparent`. Absent: no tracing,
 * and nothing is computed for it.
 */

/** One live attempt of an effect. */
export interface EffectAttempt {
  runId: string;
  namespace: string;
  workflow: string;
  kind: EntryKind;
  /** The tool's name, the model's Waymark name (`openai:gpt-4o-mini`), the step's name. */
  name: string;
  idempotencyKey: string;
  /** 1 for the first attempt; a crashed attempt redispatched keeps its number. */
  attempt: number;
  /** A redispatch of an attempt whose process died before its outcome was journaled. */
  redispatch: boolean;
  /** The lease epoch of the execution making the attempt. */
  epoch: number | null;
  /** A tool call an agent's model asked for: the model's id for it (`gen_ai.tool.call.id`). */
  toolCallId?: string;
}

/** How an attempt ended: its outcome and, for a model call, the token counts journaled with it. */
export interface EffectEnd {
  outcome: 'ok' | 'error' | 'retrying' | 'abandoned';
  error?: unknown;
  usage?: Usage | null;
}

/** The span of one attempt, as the engine sees it. */
export interface EffectSpan {
  /** W3C trace context of the span, sent with the attempt (the `http` tool's header, StepInfo.traceparent). */
  readonly traceparent: string;
  /** Runs the attempt with the span as the active one (its log lines and nested spans hang under it). */
  within<T>(fn: () => Promise<T>): Promise<T>;
  ended(end: EffectEnd): void;
}

/** One attempt of a remote tool's task, as the store knows it. */
export interface RemoteTaskAttempt {
  runId: string;
  namespace: string;
  tool: string;
  idempotencyKey: string;
  /** The task attempt (its fencing token). */
  attempt: number;
}

export interface EffectTracer {
  /**
   * Runs one execution attempt of `runId` (begun by its `lease-acquired` event) with the attempt's
   * span active: its log lines carry the span's ids and its statements are spans under it.
   */
  attemptWithin<T>(runId: string, fn: () => Promise<T>): Promise<T>;
  /** An attempt starts live; null when this kind makes no span (`now`, `uuid`, `emit`). */
  effectStarted(effect: EffectAttempt): EffectSpan | null;
  /** The traceparent a worker receives with a task attempt: the span `taskEnded` will make. */
  taskTraceparent(task: RemoteTaskAttempt): string;
  /** A worker's result (or failure) for a task attempt was accepted; `since` is when the attempt became claimable. */
  taskEnded(task: RemoteTaskAttempt & { since: Date; workerId: string; outcome: 'ok' | 'error' | 'retrying'; error?: string }): void;
}
