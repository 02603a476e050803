import { StreamLimitError } from '../errors/stream-limit-error.js';

/**
 * Counts the event streams one replica serves. A stream takes a slot before it reads anything and
 * gives it back however it ends, so the count cannot drift; past the limit a new stream is refused
 * with RESOURCE_EXHAUSTED before it touches the database.
 */
export class StreamGate {
  #open = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`the stream limit must be a whole number >= 1, got ${limit}`);
  }

  get open(): number {
    return this.#open;
  }

  /**
   * Takes a slot (StreamLimitError when none is free). It is given back by the returned function or
   * when `signal` aborts (the call ended: client gone, cancelled, deadline, shutdown), whichever
   * comes first, so a handler stuck anywhere cannot keep it.
   */
  acquire(signal?: AbortSignal): () => void {
    if (this.#open >= this.limit) throw new StreamLimitError(this.limit);
    this.#open++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#open--;
      signal?.removeEventListener('abort', release);
    };
    if (signal?.aborted) release();
    else signal?.addEventListener('abort', release, { once: true });
    return release;
  }
}
