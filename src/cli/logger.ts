import { createRequire } from 'node:module';
import { trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger } from 'pino';

export type LogFormat = 'auto' | 'json' | 'pretty';

/**
 * One event per line on stdout. JSON lines (the level as a word, so log tools need no mapping)
 * unless a person is reading: with `auto` (WAYMARK_LOG_FORMAT) a terminal gets pino-pretty's
 * readable lines instead, colours only where output.ts would use them.
 */
export function createLogger(level: string, bindings: Record<string, unknown> = {}, options: { format?: LogFormat } = {}): Logger {
  const format = options.format ?? 'auto';
  const pretty = format === 'pretty' || (format === 'auto' && process.stdout.isTTY === true);
  const settings = {
    level,
    base: { service: 'waymark', pid: process.pid, ...bindings },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    // The active span's ids when tracing is on (docs/tracing.md); nothing is active when it is off.
    mixin: traceIds,
    redact: { paths: ['databaseUrl', 'password', 'authorization', '*.authorization', 'apiKey'], censor: '[redacted]' },
  };
  return pretty ? pino(settings, prettyStream()) : pino(settings);
}

/** pino-pretty, in this thread (no transport worker to start) and loaded only when it is used. */
function prettyStream(): DestinationStream {
  const build = createRequire(import.meta.url)('pino-pretty') as (options: Record<string, unknown>) => DestinationStream;
  const colour = process.stdout.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== 'dumb';
  return build({ sync: true, colorize: colour, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname,service,command', singleLine: true });
}

/** trace_id and span_id of the span active where the line is logged, so a log line finds its trace. */
function traceIds(): Record<string, string> {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
