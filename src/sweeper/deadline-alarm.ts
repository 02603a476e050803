// sweeper/: one process timer for the store's next deadline, so a deadline that passes between sweeps is resolved then, not at the next pass.
// Must not resolve anything itself: `fire` (the sweeper's deadline duties, fenced by its leader lease) does.
import type { Logger } from 'pino';
import type { JournalStore } from '../store/store.js';

/*
 * A sweep every 5 s resolved a deadline up to 5 s late whenever no replica held it in memory (a run
 * parked before its replica restarted, a replica that was SIGKILLed holding the timer, a deadline
 * beyond the replicas' horizon, a parked run's own timeout). After each pass the sweeper asks the
 * store for the earliest deadline still ahead (deadlineNext: two index lookups) and, when it falls
 * within `withinMs`, sets one timer for it; when that fires, the deadline duties run and the alarm
 * looks again. A timer is only ever replaced by one for an earlier time, so a pass that ends just
 * after a deadline it did not yet see due cannot drop the timer set for it.
 */
export class DeadlineAlarm {
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Number.POSITIVE_INFINITY;
  private firing: Promise<unknown> = Promise.resolve();
  private stopped = false;

  constructor(private readonly o: {
    store: JournalStore;
    /** How far ahead a deadline is worth a timer: beyond it, a later pass sets one. */
    withinMs: number;
    /** Whether this sweeper leads now (only the leader acts). */
    leading: () => boolean;
    /** The deadline duties; the alarm looks for the next deadline once they end. */
    fire: () => Promise<unknown>;
    logger: Logger;
  }) {}

  /** Looks up the next deadline and sets the timer for it when it is near and earlier than the one set. */
  async rearm(): Promise<void> {
    if (this.stopped || !this.o.leading()) return;
    let next;
    try {
      next = await this.o.store.deadlineNext();
    } catch (err) {
      this.o.logger.warn({ err }, 'looking up the next deadline failed; the next sweep looks again');
      return;
    }
    if (this.stopped || next.at === null) return;
    const at = next.at.getTime();
    const delay = at - next.now.getTime();
    if (delay > this.o.withinMs || (this.timer && at >= this.armedFor)) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    // One millisecond past the deadline: the duties list what is due at `now() >= deadline`.
    this.timer = setTimeout(() => {
      this.timer = null;
      this.armedFor = Number.POSITIVE_INFINITY;
      this.firing = this.o.fire().catch(() => undefined).finally(() => void this.rearm());
    }, Math.max(1, delay + 1));
    this.timer.unref();
  }

  /** Clears the timer and waits for a firing in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.firing;
  }
}
