// runtime/: keeps one execution's run lease alive: renews it every `everyMs` (a third of the TTL by
// default) and holds the latest lease, which every fenced write of the execution uses.
// Must not write the journal or end the execution itself: a fenced renewal is reported to onLost.
import type { Logger } from 'pino';
import { LeaseLostError } from '../../journal/errors.js';
import type { Lease } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';

export interface LeaseRenewalOptions {
  store: JournalStore;
  lease: Lease;
  ttlMs: number;
  everyMs: number;
  logger: Logger;
  runId: string;
  /** Called after each successful renewal (observability; tests await it). */
  onRenewed?: (lease: Lease) => void;
  /** Another worker holds the run now: the execution must stop without writing. */
  onLost: (error: LeaseLostError) => void;
}

export class LeaseRenewal {
  /** The latest lease: the one given, then each renewal's. */
  lease: Lease;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly options: LeaseRenewalOptions) {
    this.lease = options.lease;
  }

  start(): void {
    if (this.stopped || this.timer) return;
    this.timer = setInterval(() => void this.renew(), this.options.everyMs);
    this.timer.unref();
  }

  /** No renewal starts after this; one already in flight still records its lease. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  /** A fenced renewal reports the loss at once; any other failure is retried at the next interval. */
  private async renew(): Promise<void> {
    if (this.stopped) return;
    try {
      this.lease = await this.options.store.runLeaseRenew({ lease: this.lease, ttlMs: this.options.ttlMs });
      this.options.onRenewed?.(this.lease);
    } catch (error) {
      if (error instanceof LeaseLostError) this.options.onLost(error);
      else this.options.logger.warn({ runId: this.options.runId, err: error }, 'lease renewal failed; retrying at the next interval');
    }
  }
}
