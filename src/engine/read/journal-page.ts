// read/: GetJournal: a page of a run's entries in seq order behind a page token.
// Read-only: must not write the journal or decode a page token itself (page-token.ts does).
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { JournalStore } from '../../store/store.js';
import { decodePageToken, encodePageToken } from './page-token.js';

/**
 * Bytes of out-of-line payloads one GetJournal page carries with `include_large_payloads`: the page
 * ends with the entry that reaches it, so a page holds at most this plus one payload, and a run of
 * 5 MiB results comes one result a page instead of as one response no client would accept.
 */
export const LARGE_PAYLOAD_PAGE_BYTES = 4 * 1024 * 1024;

/**
 * GetJournal: a page of a run's entries in seq order after `afterSeq` (or after the token's last
 * seq). Payloads stored out of line come as references unless `includeLargePayloads`
 * (docs/journal.md "Large payloads").
 */
export async function journalPage(store: JournalStore, params: {
  runId: string; namespace: string; afterSeq: number; pageSize: number; pageToken: string; includeLargePayloads?: boolean;
}): Promise<{ entries: JournalEntry[]; nextPageToken: string }> {
  const { runId, namespace, pageSize } = params;
  const filter = { namespace, runId };
  const cursor = decodePageToken(params.pageToken, 'journal', filter);
  const afterSeq = cursor === null ? params.afterSeq : Number(cursor);
  // One more than the page: whether a next page exists without a second read.
  const entries = await store.journalList({ runId, namespace, afterSeq, limit: pageSize + 1, payloads: 'reference' });
  let page = entries.slice(0, pageSize);
  if (params.includeLargePayloads) {
    const kept = withinPayloadBudget(page);
    // The referenced payloads of the page, fetched with its entries in one more read (none: nothing to fetch).
    if (page.slice(0, kept).some((e) => e.payloadRef)) page = await store.journalList({ runId, namespace, afterSeq, limit: kept });
    else page = page.slice(0, kept);
  }
  const last = page[page.length - 1];
  const more = entries.length > page.length;
  return { entries: page, nextPageToken: more && last ? encodePageToken('journal', filter, String(last.seq)) : '' };
}

/** How many of `page`'s entries to send: up to and including the one whose referenced payload reaches LARGE_PAYLOAD_PAGE_BYTES. */
function withinPayloadBudget(page: readonly JournalEntry[]): number {
  let bytes = 0;
  for (let i = 0; i < page.length; i++) {
    bytes += page[i]!.payloadRef?.sizeBytes ?? 0;
    if (bytes >= LARGE_PAYLOAD_PAGE_BYTES) return i + 1;
  }
  return page.length;
}
