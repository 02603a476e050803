// read/: GetJournal: a page of a run's entries in seq order behind a page token.
// Read-only: must not write the journal or decode a page token itself (page-token.ts does).
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { JournalStore } from '../../store/store.js';
import { decodePageToken, encodePageToken } from './page-token.js';

/** GetJournal: a page of a run's entries in seq order after `afterSeq` (or after the token's last seq). */
export async function journalPage(store: JournalStore, params: {
  runId: string; namespace: string; afterSeq: number; pageSize: number; pageToken: string;
}): Promise<{ entries: JournalEntry[]; nextPageToken: string }> {
  const { runId, namespace, pageSize } = params;
  const filter = { namespace, runId };
  const cursor = decodePageToken(params.pageToken, 'journal', filter);
  // One more than the page: whether a next page exists without a second read.
  const entries = await store.journalList({ runId, namespace, afterSeq: cursor === null ? params.afterSeq : Number(cursor), limit: pageSize + 1 });
  const page = entries.slice(0, pageSize);
  const last = page[page.length - 1];
  return { entries: page, nextPageToken: entries.length > pageSize && last ? encodePageToken('journal', filter, String(last.seq)) : '' };
}
