// read/: ListApprovals: a page of approvals behind a page token.
// Read-only: must not write the journal or decode a page token itself (page-token.ts does).
import type { JournalStore } from '../../store/store.js';
import { approvalList, type ApprovalListParams, type ApprovalState, type ApprovalView } from './approvals.js';
import { decodePageToken, encodePageToken } from './page-token.js';

/** ListApprovals: a page of approvals, oldest first, behind a page token (approvals.ts filters by state). */
export async function approvalPage(store: JournalStore, params: Omit<ApprovalListParams, 'cursor' | 'states'> & {
  /** Absent: PENDING only; empty: a filter that matches nothing. */
  states?: ApprovalState[];
  pageToken: string;
}): Promise<{ approvals: ApprovalView[]; nextPageToken: string }> {
  const { namespace, runId, workflowName, labels, states, pageSize } = params;
  const filter = { namespace, runId: runId ?? '', workflowName: workflowName ?? '', labels: Object.entries(labels ?? {}).sort(), states: [...(states ?? [])].sort() };
  const cursor = decodePageToken(params.pageToken, 'approvals', filter);
  if (states !== undefined && states.length === 0) return { approvals: [], nextPageToken: '' };
  const page = await approvalList(store, {
    namespace, pageSize, cursor, ...(states ? { states } : {}), ...(runId ? { runId } : {}), ...(workflowName ? { workflowName } : {}),
    ...(labels && Object.keys(labels).length ? { labels } : {}),
  });
  return { approvals: page.approvals, nextPageToken: page.nextCursor ? encodePageToken('approvals', filter, page.nextCursor) : '' };
}
