import { createRequire } from 'node:module';
import type { Logger } from 'pino';
import { spanIds } from './span-ids.js';

/**
 * OpenTelemetry tracing (docs/tracing.md): off, with no SDK loaded, unless the standard variables
 * ask for it. On means an OTLP/HTTP exporter (the SDK reads OTEL_EXPORTER_OTLP_* itself: endpoint,
 * headers, protocol, timeout), a batch span processor, W3C trace context, the AsyncLocalStorage
 * context manager, and spans per SQL statement from instrumentation-pg (the statement's text,
 * never its parameters).
 */
export interface Tracing {
  /** Flushes what is buffered and stops exporting; the process calls it once, on its way out. */
  shutdown(): Promise<void>;
}

/**
 * Whether the environment turns tracing on: an OTLP endpoint (all signals or traces only), or
 * OTEL_TRACES_EXPORTER naming an exporter; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none
 * keep it off whatever else is set, as in every OpenTelemetry SDK.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || exporter);
}

/**
 * Starts tracing if the environment asks for it, else returns null having loaded nothing. Called
 * first in the composition root, before the store is opened, so the pg driver is patched before
 * its first query.
 */
export async function startTracing(logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<Tracing | null> {
  if (!tracingRequested(env)) return null;
  const exporterName = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporterName && exporterName !== 'otlp') {
    logger.warn({ OTEL_TRACES_EXPORTER: exporterName }, 'only the otlp trace exporter is built in; tracing stays off');
    return null;
  }
  // Loaded here, not at the top: a process without tracing never loads the SDK.
  const { NodeTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-node');
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes, defaultResource } = await import('@opentelemetry/resources');
  const { PgInstrumentation } = await import('@opentelemetry/instrumentation-pg');

  const serviceName = env.OTEL_SERVICE_NAME?.trim() || 'waymark';
  const provider = new NodeTracerProvider({
    // Random ids, but for spans the run tracer derives from the run (span-ids.ts).
    idGenerator: spanIds,
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': serviceName })),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  provider.register();
  // Parameters are never recorded (enhancedDatabaseReporting stays off); a statement outside any
  // span (the executor's polling, the sweeper's scans) makes no trace of its own.
  // Constructed after register(), so it enables itself on the global provider.
  const pg = new PgInstrumentation({ enhancedDatabaseReporting: false, requireParentSpan: true });
  patchLoadedPg();
  logger.info({ serviceName }, 'tracing on: spans exported over OTLP/HTTP');
  return {
    async shutdown() {
      pg.disable();
      await provider.shutdown().catch((err: unknown) => logger.warn({ err }, 'tracing shutdown failed'));
    },
  };
}

/**
 * The store imports pg as an ES module, which the instrumentation's require hook does not see.
 * pg is CommonJS, so an ES import and a require share one module object: requiring it (and the
 * pool it uses) once here lets the hook patch the prototypes every importer uses.
 */
function patchLoadedPg(): void {
  const require = createRequire(import.meta.url);
  require('pg');
  require(createRequire(require.resolve('pg')).resolve('pg-pool'));
}
