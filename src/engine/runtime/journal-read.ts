// runtime/: reads a run's whole journal for replay, in keyset pages of the store's journalList.
// Must not interpret entries (replay/ does) nor read anything but the one run's journal.
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { JournalStore } from '../../store/store.js';

/*
 * A resume at the journal limit reads 100,000 entries. One statement for all of them holds the
 * driver's rows and the decoded entries at once (twice the memory of the entries alone, docs/
 * performance.md "Replay at the journal limit"); pages of `pageSize` keep one page of rows at a
 * time. Pages are keyed by seq (`afterSeq`), and the result is what one read would have returned
 * at the time of the last page: entries are never changed once written and a run's seqs become
 * visible in order (docs/journal.md "Reading a long journal"), so the pages join without a gap.
 */

/** Entries per page when an execution reads its journal (EngineOptions.journalPageSize). */
export const JOURNAL_PAGE_SIZE = 5_000;

/** Every entry of the run's journal in seq order, read `pageSize` at a time. */
export async function journalReadAll(store: JournalStore, runId: string, pageSize: number = JOURNAL_PAGE_SIZE): Promise<JournalEntry[]> {
  if (!(Number.isInteger(pageSize) && pageSize > 0)) throw new RangeError(`journal page size must be a positive integer, got ${pageSize}`);
  const entries: JournalEntry[] = [];
  for (;;) {
    const page = await store.journalList({ runId, afterSeq: entries.length === 0 ? -1 : entries[entries.length - 1]!.seq, limit: pageSize });
    for (const e of page) entries.push(e);
    if (page.length < pageSize) return entries;
  }
}
