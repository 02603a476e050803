/*
 * What one client may hold in server memory (issue 16, "Build"): the response bytes a replica has
 * handed to HTTP/2 for a client that the client has not taken yet, summed over all its streams and
 * calls (WAYMARK_CLIENT_MAX_BUFFERED_BYTES). A reader that stops reading blocks its streams on
 * HTTP/2 flow control, and what the server already wrote to them waits in memory until the client
 * reads it or goes; with a stream limit of 100 per client and messages of up to a few MiB, that was
 * hundreds of MiB one client could pin.
 *
 * The HTTP/2 handler counts a write from the moment it hands the bytes to the stream until Node
 * reports them written to the socket (or the stream closes). A write that would take the client
 * past its limit while others of its writes are still queued is not made: that stream is reset
 * with ENHANCE_YOUR_CALM (gRPC clients report RESOURCE_EXHAUSTED), which frees what it held. So a
 * client's queued bytes stay within max(limit, one message). From then until it has read its way
 * back under half its limit, a new call of that client is refused before its handler runs
 * (client-limits.ts, CLIENT_BUFFER_LIMIT), so nothing is written for an answer it could not take.
 * test/server/client-buffers.test.ts pins both, and that other clients are served meanwhile.
 */

export class ClientBuffers {
  readonly #queued = new Map<string, number>();
  /** Clients a write was refused for, until they are back under half their limit. */
  readonly #over = new Set<string>();
  #peak = 0;

  constructor(readonly limitBytes: number) {
    if (!Number.isInteger(limitBytes) || limitBytes < 1) throw new RangeError(`the buffered bytes limit must be a whole number >= 1, got ${limitBytes}`);
  }

  /** Bytes written for `client` and not yet on the socket. */
  queued(client: string): number {
    return this.#queued.get(client) ?? 0;
  }

  /** The most any one client ever had queued (tests and diagnostics). */
  get peakBytes(): number {
    return this.#peak;
  }

  /**
   * Whether new calls of `client` are refused: a write of its was refused and it has not read its
   * way back under half its limit yet (so a client at its limit is not let in and out on every read).
   */
  full(client: string): boolean {
    return this.#over.has(client) && this.queued(client) > this.limitBytes / 2;
  }

  /**
   * Counts a write of `bytes` for `client`, or refuses it (false) when it would take the client past
   * its limit while others of its writes are queued: a message larger than the limit still goes out alone.
   */
  take(client: string, bytes: number): boolean {
    const queued = this.queued(client);
    if (queued > 0 && queued + bytes > this.limitBytes) {
      this.#over.add(client);
      return false;
    }
    this.#queued.set(client, queued + bytes);
    this.#peak = Math.max(this.#peak, queued + bytes);
    return true;
  }

  /** The write of `bytes` for `client` is on the socket, or its stream is gone. */
  give(client: string, bytes: number): void {
    const left = this.queued(client) - bytes;
    if (left > 0) this.#queued.set(client, left);
    else this.#queued.delete(client);
    if (left <= this.limitBytes / 2) this.#over.delete(client);
  }
}
