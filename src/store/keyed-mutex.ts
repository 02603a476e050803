/*
 * A mutual-exclusion lock per key, within one process: `acquire(key)` resolves once every earlier
 * holder of that key released. Used by both stores for budget admission (budgetLock), so that
 * concurrent callers in one process queue here instead of each holding a database connection.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  /** Resolves with an idempotent release once the caller holds `key`. */
  async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    const tail = previous.then(() => held);
    this.tails.set(key, tail);
    await previous;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      release();
      // The last holder of a key leaves no entry behind.
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
  }
}
