/**
 * Polls `probe` until it returns a value (anything but undefined), and returns it; fails naming
 * `what` after `timeoutMs`. For states a test cannot await as an event (a row in another process's
 * database, a request seen by a fake provider).
 */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
