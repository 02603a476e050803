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
