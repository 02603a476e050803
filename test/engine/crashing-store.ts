import type { JournalEntry } from '../../src/journal/journal-entry.js';
import type { JournalStore } from '../../src/store/store.js';

/** What a crash looks like to the worker: its process is gone mid-write. */
export class SimulatedCrash extends Error {
  constructor(readonly write: number, readonly committed: boolean) {
    super(`simulated crash at write ${write} (${committed ? 'after' : 'before'} it committed)`);
  }
}

export interface CrashPoint {
  /** 1-based index among the fenced writes (journalAppend, runStatusSet, runLeaseAcquireRunning) of the whole test. */
  write: number;
  /** `after`: the write commits and the worker dies before seeing it (an ambiguous commit). */
  when: 'before' | 'after';
}

/**
 * Wraps a store so the worker "dies" at chosen fenced writes: the call throws SimulatedCrash,
 * before or after the write reached the store. `commits` logs every `ok` effect entry the store
 * accepted, in order, for the oracle (no effect may run after its `ok` committed).
 */
export function crashingStore(inner: JournalStore, points: CrashPoint[], log: (event: string) => void): { store: JournalStore; writes: () => number } {
  let writes = 0;
  const at = new Map(points.map((p) => [p.write, p.when]));
  const fenced = async <T>(write: () => Promise<T>, onCommit: (result: T) => void): Promise<T> => {
    const n = ++writes;
    const when = at.get(n);
    if (when === 'before') throw new SimulatedCrash(n, false);
    const result = await write();
    onCommit(result);
    if (when === 'after') throw new SimulatedCrash(n, true);
    return result;
  };
  const logOk = (entries: JournalEntry[]) => {
    for (const e of entries) if (e.status === 'ok' && e.idempotencyKey) log(`commit ${e.idempotencyKey}`);
  };
  const store = new Proxy(inner, {
    get(target, key) {
      if (key === 'journalAppend') {
        return (p: Parameters<JournalStore['journalAppend']>[0]) => fenced(() => target.journalAppend(p), logOk);
      }
      if (key === 'runLeaseAcquireRunning') {
        // A take with its RUNNING entry is a write too: a crash right after it leaves the lease to expire.
        return (p: Parameters<JournalStore['runLeaseAcquireRunning']>[0]) => fenced(() => target.runLeaseAcquireRunning(p), () => undefined);
      }
      if (key === 'runStatusSet') {
        return (p: Parameters<JournalStore['runStatusSet']>[0]) => fenced(() => target.runStatusSet(p), () => undefined);
      }
      const value = Reflect.get(target, key) as unknown;
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store, writes: () => writes };
}
