/** One wake-up subscription, as passed to JournalStore.wakeupSubscribe. */
export interface WakeupSubscriber {
  runId?: string;
  onRun?: (runId: string) => void;
  onDelta?: (runId: string) => void;
  onPending?: () => void;
  onTask?: (namespace: string) => void;
  onResync?: () => void;
}

/**
 * The memory store's stand-in for LISTEN/NOTIFY. Callbacks run on a microtask, after the write
 * that caused them has returned, so (like NOTIFY after COMMIT) a woken reader always sees the write.
 */
export class MemoryWakeups {
  private readonly subscribers = new Set<WakeupSubscriber>();

  subscribe(subscriber: WakeupSubscriber): () => Promise<void> {
    const own = { ...subscriber };
    this.subscribers.add(own);
    return async () => {
      this.subscribers.delete(own);
    };
  }

  notify(runId: string, pending: boolean): void {
    for (const s of this.subscribers) {
      if (s.onRun && (s.runId === undefined || s.runId === runId)) {
        const onRun = s.onRun;
        queueMicrotask(() => this.subscribers.has(s) && onRun(runId));
      }
      if (pending && s.onPending) {
        const onPending = s.onPending;
        queueMicrotask(() => this.subscribers.has(s) && onPending());
      }
    }
  }

  /** The run's model call deltas grew (migration 0019's trigger, in memory). */
  notifyDelta(runId: string): void {
    for (const s of this.subscribers) {
      const onDelta = s.onDelta;
      if (onDelta && (s.runId === undefined || s.runId === runId)) queueMicrotask(() => this.subscribers.has(s) && onDelta(runId));
    }
  }

  /** A remote task of `namespace` became claimable (migration 0016's trigger, in memory). */
  notifyTask(namespace: string): void {
    for (const s of this.subscribers) {
      const onTask = s.onTask;
      if (onTask) queueMicrotask(() => this.subscribers.has(s) && onTask(namespace));
    }
  }

  clear(): void {
    this.subscribers.clear();
  }
}
