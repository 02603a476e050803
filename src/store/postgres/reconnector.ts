/** The backoff of the store's dedicated connections (wake-up listener, lease session) between reconnects. */
export interface ReconnectBackoff {
  /** The first delay (default 50 ms), doubled per failed attempt. */
  minBackoffMs?: number;
  /** The ceiling (default 5 s). */
  maxBackoffMs?: number;
}

/** The delay before reconnect attempt `attempt` (0-based): exponential with equal jitter, so replicas cut off together do not return together. */
export function reconnectDelayMs(attempt: number, backoff: ReconnectBackoff): number {
  const base = Math.min(backoff.maxBackoffMs ?? 5_000, (backoff.minBackoffMs ?? 50) * 2 ** attempt);
  return base * (0.5 + Math.random() / 2);
}

/** What a Reconnector retries and whom it tells. */
export interface ReconnectLoop {
  backoff: ReconnectBackoff;
  /** One reconnect attempt; it calls Reconnector.connected() once the connection is up. */
  attempt: () => Promise<void>;
  /** After a successful attempt (the wake-up listener's catch-up). */
  onSuccess?: () => void;
  /** A failed attempt, before the next is scheduled (unless `stopped`). */
  onFailure: (err: unknown) => void;
  /** True once the owner closed: a failure then schedules nothing. */
  stopped: () => boolean;
}

/**
 * The reconnect loop of a dedicated connection (wake-up listener, lease session): an attempt after
 * reconnectDelayMs, and again after each failure, until one succeeds or the owner stops.
 */
export class Reconnector {
  private attempts = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly loop: ReconnectLoop) {}

  /** Schedules the next attempt after its backoff (the connection was lost, or an attempt failed). */
  schedule(): void {
    const delay = reconnectDelayMs(this.attempts, this.loop.backoff);
    this.attempts += 1;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.loop.attempt().then(
        () => this.loop.onSuccess?.(),
        (err: unknown) => {
          if (this.loop.stopped()) return;
          this.loop.onFailure(err);
          this.schedule();
        },
      );
    }, delay);
    this.timer.unref();
  }

  /** The connection is up: the next loss starts again from the first delay. */
  connected(): void {
    this.attempts = 0;
  }

  /** No attempt after this (the owner is closing). */
  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
