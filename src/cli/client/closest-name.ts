/*
 * "Did you mean": the valid name nearest to a mistyped one (a command, an option), by edit
 * distance, or by prefix for a name cut short (`--work` -> `--workflows`). None when nothing is
 * close, so a suggestion is never a wild guess. Small enough not to be worth a dependency.
 */

/** The candidate closest to `typed`, or undefined when none is within a typo's reach of it. */
export function closestName(typed: string, candidates: Iterable<string>): string | undefined {
  const word = typed.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const distance = candidate.startsWith(word) && word.length >= 3 ? 0.5 : editDistance(word, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  // One edit in four letters, at least one and at most three: `deb` -> `dev`, `--workflow` -> `--workflows`.
  const reach = Math.min(3, Math.max(1, Math.floor(typed.length / 4)));
  return bestDistance <= reach ? best : undefined;
}

/** Levenshtein distance, with a swap of two neighbouring letters counted as one edit. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
