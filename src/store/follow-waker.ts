// store/: the waiting half of a follower (journal-follow.ts, run-follow.ts): wake-ups that land mid-read are not lost.
// Must not read anything: the follower reads; this only says when to read again.

/*
 * A follower reads, then waits for a wake-up (its run's NOTIFY, a LISTEN resync), a timer or its
 * abort, and reads again. A wake-up that lands while it is still reading must not be slept
 * through: `round()` marks the start of a read, and `wait()` returns at once if a wake-up came
 * since. `onWake` is what the follower subscribes with.
 */
export class FollowWaker {
  private woken = false;
  private wake: (() => void) | null = null;

  readonly onWake = (): void => {
    this.woken = true;
    this.wake?.();
  };

  /** A read starts: only wake-ups from now on count. */
  round(): void {
    this.woken = false;
  }

  /** Resolves on a wake-up, after `ms`, or on `signal`'s abort; at once when a wake-up came since round() or the signal is aborted. */
  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}
