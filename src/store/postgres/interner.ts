/**
 * One string per distinct value within one read: node-postgres builds a new string for every cell,
 * and a long journal repeats a few kinds, statuses, names, scopes and content keys in every row (a
 * resume of 100,000 entries held 100,000 copies of each; docs/performance.md, issue 31). Likewise
 * one Date per distinct time (about 100 bytes each): the entries of one append share their
 * commit's. Entries' Dates are values: nothing sets them.
 */
export interface Strings {
  of(value: string): string;
  date(value: Date): Date;
}

/** Values as they were read: for a single row, where nothing repeats. */
export const AS_READ: Strings = { of: (value) => value, date: (value) => value };

export class Interner implements Strings {
  private readonly strings = new Map<string, string>();
  private readonly dates = new Map<number, Date>();

  of(value: string): string {
    const kept = this.strings.get(value);
    if (kept !== undefined) return kept;
    this.strings.set(value, value);
    return value;
  }

  date(value: Date): Date {
    const time = value.getTime();
    const kept = this.dates.get(time);
    if (kept !== undefined) return kept;
    this.dates.set(time, value);
    return value;
  }
}
