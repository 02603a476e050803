import { createHash } from 'node:crypto';
import { context, SpanKind, SpanStatusCode, trace, TraceFlags, type Span } from '@opentelemetry/api';
import type { RunEngine } from '../engine/index.js';

/**
 * A span per execution attempt (docs/tracing.md), from the engine's events as CONTRIBUTING's
 * "A span or a metric per effect" says: started on `lease-acquired`, ended on `execution-ended`
 * with its outcome. Every attempt of a run, on any replica, is in one trace whose id is the run's
 * id (a UUID is 128 bits, a trace id's size), under a root span id derived from it, so a run
 * resumed elsewhere continues the same trace with nothing stored or passed between replicas.
 */
export function watchExecutions(engine: RunEngine): void {
  const tracer = trace.getTracer('waymark.engine');
  const open = new Map<string, Span>();
  engine.events.on('lease-acquired', ({ runId, lease }) => {
    open.get(runId)?.end();
    const span = tracer.startSpan('waymark.execution', {
      kind: SpanKind.INTERNAL,
      attributes: { 'waymark.run_id': runId, 'waymark.lease_epoch': lease.epoch, 'waymark.holder': lease.holder },
    }, runTraceContext(runId));
    open.set(runId, span);
  });
  engine.events.on('execution-ended', (result) => {
    const span = open.get(result.runId);
    if (!span) return;
    open.delete(result.runId);
    span.setAttribute('waymark.outcome', result.outcome);
    if (result.run) span.setAttribute('waymark.workflow', result.run.workflowName);
    if (result.outcome === 'failed' || result.outcome === 'aborted') span.setStatus({ code: SpanStatusCode.ERROR, message: result.outcome });
    span.end();
  });
}

/** The run's trace: trace id = the run id's hex digits, parent span id = 8 bytes of its SHA-256. */
export function runTraceContext(runId: string) {
  const traceId = runId.replaceAll('-', '').toLowerCase();
  const spanId = createHash('sha256').update(runId).digest('hex').slice(0, 16);
  return trace.setSpanContext(context.active(), { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
}
