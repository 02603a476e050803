// scheduling/: a binary min-heap of values keyed by a deadline (ms since the epoch).
// Must not know what it holds: due-timers.ts gives it meaning.

/*
 * Twenty lines of a textbook structure rather than a dependency: push and pop are O(log n), so one
 * process timer serves every held deadline (due-timers.ts) however many runs park at once.
 */
export class DeadlineHeap<T> {
  private readonly items: { at: number; value: T }[] = [];

  get size(): number {
    return this.items.length;
  }

  push(at: number, value: T): void {
    const items = this.items;
    items.push({ at, value });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= at) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  /** The earliest deadline held, or null when empty. */
  peekDeadline(): number | null {
    return this.items[0]?.at ?? null;
  }

  /** Removes and returns, earliest first, every value whose deadline is at or before `now`. */
  popDue(now: number): T[] {
    const due: T[] = [];
    while (this.items.length > 0 && this.items[0]!.at <= now) due.push(this.pop());
    return due;
  }

  clear(): void {
    this.items.length = 0;
  }

  private pop(): T {
    const items = this.items;
    const top = items[0]!;
    const last = items.pop()!;
    if (items.length > 0) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let min = i;
        if (l < items.length && items[l]!.at < items[min]!.at) min = l;
        if (r < items.length && items[r]!.at < items[min]!.at) min = r;
        if (min === i) break;
        [items[i], items[min]] = [items[min]!, items[i]!];
        i = min;
      }
    }
    return top.value;
  }
}
