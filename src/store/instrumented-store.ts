import type { JournalStore } from './store.js';

/** The store methods that append journal entries: their latency is the engine's write path. */
const TIMED = new Set<string | symbol>(['journalAppend', 'runStatusSet', 'journalResolve']);

export type StoreCallObserver = (call: { method: string; seconds: number; ok: boolean }) => void;

/**
 * Wraps any JournalStore and reports how long each journal write took, so metrics live in the
 * composition root (cli/) and no store implementation carries metrics code. A Proxy rather than a
 * class so methods added to JournalStore pass through untouched.
 */
export function instrumentedStore<S extends JournalStore>(store: S, observe: StoreCallObserver): S {
  return new Proxy(store, {
    get(target, key) {
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (!TIMED.has(key)) return method;
      return async (...args: unknown[]) => {
        const started = performance.now();
        let ok = false;
        try {
          const result = await method(...args);
          ok = true;
          return result;
        } finally {
          observe({ method: String(key), seconds: (performance.now() - started) / 1000, ok });
        }
      };
    },
  });
}
