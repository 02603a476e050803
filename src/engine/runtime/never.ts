// runtime/: the promise a call returns once its execution is over: it never settles, and holds nothing.
// Must not be one shared promise: that would keep every awaiting body alive; each call makes a fresh one.

/**
 * A promise that never settles, new on every call. Whoever awaits it is kept alive only by it, so
 * once nothing else refers to the awaiting body it is garbage. One promise shared by every call
 * would instead collect a reaction per await and keep each parked body, its execution and the
 * journal it read alive for the life of the process (issue 31: 100,000 parked runs).
 */
export function never<T = never>(): Promise<T> {
  return new Promise<T>(() => {});
}
