// replay/: lets a long piece of synchronous work (compiling a tenant's schemas or conditions) give the event loop back now and then.
// Must not do I/O or hold the loop: its only timer is one turn of setImmediate, so streams, health checks and other requests run between the pieces.

/** How long a piece of work may hold the event loop before it lets others run. */
export const LOOP_SHARE_MS = 20;

/**
 * Call pause() between pieces of work: once LOOP_SHARE_MS have passed since the last turn, it
 * waits one turn of the event loop. A request that compiles a hundred schemas then holds the loop
 * for about one schema's compile at a time, not for all of them (test/server/hostile-tenant-*.test.ts).
 */
export class LoopShare {
  private since = performance.now();

  async pause(): Promise<void> {
    if (performance.now() - this.since < LOOP_SHARE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.since = performance.now();
  }
}
