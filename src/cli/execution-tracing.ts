import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Span } from '@opentelemetry/api';
import type { EffectAttempt, EffectEnd, EffectSpan, EffectTracer, RemoteTaskAttempt, RunEngine } from '../engine/index.js';
import type { WebhookDelivery } from '../store/store.js';
import type { WebhookTracer } from '../webhooks/dispatcher.js';
import { derivedSpanId, spanIds } from './span-ids.js';

/**
 * The run's spans (docs/tracing.md): one per execution attempt, from the engine's events as
 * CONTRIBUTING's "A span or a metric per effect" says (started on `lease-acquired`, ended on
 * `execution-ended` with its outcome), one per live effect attempt under it (the engine's
 * EffectTracer hook: tools and MCP tools as `execute_tool`, model calls as `chat` with the GenAI
 * semantic conventions, steps), one per remote task attempt when its result comes back, and one
 * per webhook delivery attempt (a client span whose traceparent the POST carries).
 * Every span of a run, on any replica, is in one trace whose id is the run's id (a UUID is 128
 * bits, a trace id's size), so a run resumed elsewhere continues the same trace with nothing
 * stored or passed between replicas. Effect and task span ids are derived from the run, the
 * effect's idempotency key and its attempt (span-ids.ts).
 */
export class RunTracing implements EffectTracer, WebhookTracer {
  private readonly tracer = trace.getTracer('waymark.engine');
  /** The open execution attempt of each run executing here: its effects' parent. */
  private readonly open = new Map<string, Span>();

  /** Spans per execution attempt from `engine`'s events. */
  watch(engine: RunEngine): void {
    engine.events.on('lease-acquired', ({ runId, lease }) => {
      this.open.get(runId)?.end();
      const span = spanIds.chosen(derivedSpanId(runId, 'execution', lease.epoch), () => this.tracer.startSpan('waymark.execution', {
        kind: SpanKind.INTERNAL,
        attributes: { 'waymark.run_id': runId, 'waymark.lease_epoch': lease.epoch, 'waymark.holder': lease.holder },
      }, runTraceContext(runId)));
      this.open.set(runId, span);
    });
    engine.events.on('execution-ended', (result) => {
      const span = this.open.get(result.runId);
      if (!span) return;
      this.open.delete(result.runId);
      span.setAttribute('waymark.outcome', result.outcome);
      if (result.run) span.setAttribute('waymark.workflow', result.run.workflowName);
      if (result.outcome === 'failed' || result.outcome === 'aborted') span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome });
      span.end();
    });
  }

  attemptWithin<T>(runId: string, fn: () => Promise<T>): Promise<T> {
    const attempt = this.open.get(runId);
    return attempt ? context.with(trace.setSpan(context.active(), attempt), fn) : fn();
  }

  effectStarted(effect: EffectAttempt): EffectSpan | null {
    const shape = effectShape(effect);
    if (!shape) return null;
    const attempt = this.open.get(effect.runId);
    const parent = attempt ? trace.setSpan(context.active(), attempt) : runTraceContext(effect.runId);
    const span = spanIds.chosen(derivedSpanId(effect.runId, effect.idempotencyKey, effect.attempt), () => this.tracer.startSpan(shape.name, {
      kind: SpanKind.INTERNAL,
      attributes: {
        ...shape.attributes,
        'waymark.run_id': effect.runId, 'waymark.effect.kind': effect.kind, 'waymark.effect.attempt': effect.attempt,
        ...(effect.redispatch ? { 'waymark.effect.redispatch': true } : {}),
      },
    }, parent));
    const active = trace.setSpan(context.active(), span);
    return {
      traceparent: traceparentOf(span),
      within: (fn) => context.with(active, fn),
      ended: (end) => endEffect(span, end),
    };
  }

  taskTraceparent(task: RemoteTaskAttempt): string {
    return `00-${traceIdOf(task.runId)}-${taskSpanId(task)}-01`;
  }

  taskEnded(task: RemoteTaskAttempt & { since: Date; workerId: string; outcome: 'ok' | 'error' | 'retrying'; error?: string }): void {
    const span = spanIds.chosen(taskSpanId(task), () => this.tracer.startSpan(`execute_tool ${task.tool}`, {
      kind: SpanKind.INTERNAL,
      startTime: task.since,
      attributes: {
        'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': task.tool, 'gen_ai.tool.call.id': task.idempotencyKey,
        'waymark.run_id': task.runId, 'waymark.effect.kind': 'tool', 'waymark.tool.source': 'remote',
        'waymark.task.attempt': task.attempt, 'waymark.worker_id': task.workerId, 'waymark.outcome': task.outcome,
      },
    }, runTraceContext(task.runId)));
    if (task.outcome !== 'ok') {
      span.setAttribute('error.type', task.error ?? 'Error');
      if (task.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: task.error ?? 'Error' });
    }
    span.end();
  }

  deliveryStarted(delivery: WebhookDelivery): { traceparent: string; ended(result: { ok: boolean; status: number | null }): void } {
    const span = this.tracer.startSpan(`webhook ${delivery.eventType}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        'http.request.method': 'POST', 'waymark.run_id': delivery.runId, 'waymark.webhook.id': delivery.messageId,
        'waymark.webhook.endpoint_id': delivery.endpointId, 'waymark.webhook.attempt': delivery.attempts,
      },
    }, runTraceContext(delivery.runId));
    return {
      traceparent: traceparentOf(span),
      ended({ ok, status }) {
        if (status !== null) span.setAttribute('http.response.status_code', status);
        if (!ok) span.setStatus({ code: SpanStatusCode.ERROR, message: status === null ? 'no answer' : `HTTP ${status}` });
        span.end();
      },
    };
  }
}

/** The name and GenAI attributes of an effect's span; null for the kinds that make none (`now`, `uuid`, `emit`: no work of their own). */
function effectShape(effect: EffectAttempt): { name: string; attributes: Attributes } | null {
  if (effect.kind === 'model') {
    // A Waymark model name is `provider:model` (docs/agents.md).
    const colon = effect.name.indexOf(':');
    const provider = colon > 0 ? effect.name.slice(0, colon) : effect.name;
    const model = colon > 0 ? effect.name.slice(colon + 1) : effect.name;
    return { name: `chat ${model}`, attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': provider, 'gen_ai.request.model': model } };
  }
  if (effect.kind === 'tool') {
    return {
      name: `execute_tool ${effect.name}`,
      attributes: {
        // The model's id for an agent's tool call; the idempotency key (stable, unique per call) otherwise.
        'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': effect.name, 'gen_ai.tool.call.id': effect.toolCallId ?? effect.idempotencyKey,
        'waymark.tool.source': effect.name.includes('.') ? 'mcp' : 'local',
      },
    };
  }
  if (effect.kind === 'step') return { name: `step ${effect.name}`, attributes: { 'waymark.step.name': effect.name } };
  return null;
}

function endEffect(span: Span, end: EffectEnd): void {
  span.setAttribute('waymark.outcome', end.outcome);
  if (end.usage?.inputTokens !== undefined) span.setAttribute('gen_ai.usage.input_tokens', end.usage.inputTokens);
  if (end.usage?.outputTokens !== undefined) span.setAttribute('gen_ai.usage.output_tokens', end.usage.outputTokens);
  if (end.outcome === 'error' || end.outcome === 'retrying') {
    // The error's class, never its message: a message may quote a payload (docs/tracing.md "What is never recorded").
    const type = end.error instanceof Error ? end.error.name : 'Error';
    span.setAttribute('error.type', type);
    if (end.outcome === 'error') span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
  span.end();
}

function taskSpanId(task: RemoteTaskAttempt): string {
  return derivedSpanId(task.runId, 'task', task.idempotencyKey, task.attempt);
}

function traceparentOf(span: Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-${(traceFlags & TraceFlags.SAMPLED) === TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** A run's trace id: its id's hex digits. */
function traceIdOf(runId: string): string {
  return runId.replaceAll('-', '').toLowerCase();
}

/** The run's trace: trace id = the run id's hex digits, parent span id = 8 bytes of its SHA-256 (a root no process exports). */
export function runTraceContext(runId: string) {
  return trace.setSpanContext(context.active(), { traceId: traceIdOf(runId), spanId: derivedSpanId(runId), traceFlags: TraceFlags.SAMPLED, isRemote: true });
}
