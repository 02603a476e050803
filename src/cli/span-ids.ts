import { createHash, randomBytes } from 'node:crypto';

/**
 * The tracer provider's span ids (docs/tracing.md "Span ids"): random, except for a span started
 * inside `chosen(id, …)`, which gets `id`. An effect attempt's span id is derived from its run,
 * idempotency key and attempt, so a worker or an HTTP server can be handed the `traceparent` of a
 * span made later or on another replica (a remote task's), and a redispatch after a crash presents
 * the id the lost attempt would have had. Implements the SDK's IdGenerator without importing it, so
 * a process without tracing loads nothing.
 */
export class ChosenSpanIds {
  private next: string | null = null;

  generateTraceId(): string {
    return nonZero(randomBytes(16).toString('hex'));
  }

  generateSpanId(): string {
    const id = this.next;
    this.next = null;
    return id ?? nonZero(randomBytes(8).toString('hex'));
  }

  /** Runs `start` (one synchronous startSpan) so that the span it starts has id `spanId`. */
  chosen<T>(spanId: string, start: () => T): T {
    this.next = spanId;
    try {
      return start();
    } finally {
      this.next = null;
    }
  }
}

/** The process's id generator: tracing.ts gives it to the provider, the run tracer chooses ids through it. */
export const spanIds = new ChosenSpanIds();

/** A span id (16 hex digits, never all zero) derived from `parts`. */
export function derivedSpanId(...parts: (string | number)[]): string {
  return nonZero(createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 16));
}

/** A W3C trace id or span id must not be all zeros. */
function nonZero(hex: string): string {
  return /^0+$/.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}
