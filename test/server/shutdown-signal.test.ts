import { getEventListeners } from 'node:events';
import { createContextValues, type HandlerContext } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { shutdownSignalKey, streamSignal } from '../../src/server/transport/shutdown-signal.js';

/** The server-wide draining signal's set of dependant signals (Node's AbortSignal.any keeps one per signal it made). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  return key ? ((signal as unknown as Record<symbol, Set<unknown>>)[key]?.size ?? 0) : 0;
}

function call(draining: AbortSignal): { ctx: HandlerContext; end: AbortController } {
  const end = new AbortController();
  const ctx = { signal: end.signal, values: createContextValues().set(shutdownSignalKey, draining) } as unknown as HandlerContext;
  return { ctx, end };
}

describe('streamSignal', () => {
  it('the server-wide draining signal keeps nothing of streams that ended (it lives as long as the server)', () => {
    const draining = new AbortController();
    for (let i = 0; i < 1_000; i++) {
      const { ctx, end } = call(draining.signal);
      const signal = streamSignal(ctx);
      end.abort(new Error('the client closed the stream'));
      expect(signal.aborted).toBe(true);
    }
    expect(getEventListeners(draining.signal, 'abort')).toHaveLength(0);
    expect(dependants(draining.signal)).toBe(0);
  });

  it('aborts with the reason of the call ending or of the server draining, whichever comes first', () => {
    const draining = new AbortController();
    const a = call(draining.signal);
    const aSignal = streamSignal(a.ctx);
    const cancelled = new Error('cancelled');
    a.end.abort(cancelled);
    expect(aSignal.reason).toBe(cancelled);
    const b = call(draining.signal);
    const bSignal = streamSignal(b.ctx);
    const shutdown = new Error('draining');
    draining.abort(shutdown);
    expect(bSignal.reason).toBe(shutdown);
    expect(getEventListeners(b.end.signal, 'abort')).toHaveLength(0);
    // A stream that starts once the server drains is aborted from the start.
    expect(streamSignal(call(draining.signal).ctx).reason).toBe(shutdown);
  });
});
