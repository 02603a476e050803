// author/: the Duration workflows write (`500ms`, `30s`, `1h30m`, or milliseconds) and its parser.
// Pure: must not read the clock or import anything else of the engine.
/** A length of time: milliseconds, or text such as `500ms`, `30s`, `15m`, `24h`, `7d`, `1h30m`. */
export type Duration = number | string;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;

/** Milliseconds of a duration; throws RangeError for anything else (the message says the format). */
export function durationMs(duration: Duration): number {
  if (typeof duration === 'number') {
    if (Number.isFinite(duration) && duration >= 0) return Math.round(duration);
    throw new RangeError(`duration ${duration} must be a finite number of milliseconds >= 0`);
  }
  const text = duration.trim();
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < text.length) {
    const at = PART.lastIndex;
    const m = PART.exec(text);
    if (!m || m.index !== at) {
      throw new RangeError(`duration "${duration}" is not understood; write e.g. 500ms, 30s, 15m, 24h, 7d or 1h30m`);
    }
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  if (text.length === 0) throw new RangeError('duration is empty; write e.g. 30s or 24h');
  return Math.round(total);
}
