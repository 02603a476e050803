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
