/** Small statistics for the benchmark: percentiles over samples, medians over repetitions. */
export function percentile(samples: number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

/** Runs `fn` `n` times and returns each result; the figure reported is the median of each field. */
export async function repeat<T extends Record<string, number>>(n: number, fn: (i: number) => Promise<T>): Promise<T> {
  const results: T[] = [];
  for (let i = 0; i < n; i++) results.push(await fn(i));
  const out: Record<string, number> = {};
  for (const key of Object.keys(results[0]!)) out[key] = median(results.map((r) => r[key]!));
  return out as T;
}

/** Runs `fn` for each of `count` items with at most `concurrency` in flight. */
export async function pool(count: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) await fn(next++);
  });
  await Promise.all(workers);
}

export const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

/**
 * A client process's timed pass: `call(i)` for each of `count` items at `concurrency`, the latency
 * of each call, and the process's CPU over the timed window (ms). What bench/grpc-client.ts and
 * bench/restate-client.ts print, so both peers' rows are timed the same way.
 */
export async function timedCalls(count: number, concurrency: number, call: (i: number) => Promise<void>) {
  const latencies: number[] = [];
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await pool(count, concurrency, async (i) => {
    const t = performance.now();
    await call(i);
    latencies.push(performance.now() - t);
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return { runsPerSec: count / seconds, runP50Ms: percentile(latencies, 50), runP99Ms: percentile(latencies, 99), cpuMs: (cpu.user + cpu.system) / 1000 };
}
