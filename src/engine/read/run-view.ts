// read/: runs as the API shows them (GetRun, ListRuns) with their spend and what they wait on.
// Read-only: must not write the journal or decode a page token itself (page-token.ts does).
import type { Run, RunStatus } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { decodePageToken, encodePageToken } from './page-token.js';
import { ownSpend, runSpend } from './spend.js';

/*
 * Runs as the API shows them: GetRun (the run, what it spent with its children, what it waits on)
 * and ListRuns (a page of runs behind a page token, each with its own spend).
 */

export interface RunView {
  run: Run;
  /** GetRun: the run's and its children's spend, as budgets count it; ListRuns: the run's own entries. */
  spentUsd: number;
}

export interface RunPageParams {
  namespace: string;
  /** Absent: every status; empty: a filter that matches nothing. */
  statuses?: RunStatus[];
  workflowName?: string;
  labels?: Record<string, string>;
  parentRunId?: string;
  pageSize: number;
  /** '' for the first page, else next_page_token (page-token.ts). */
  pageToken: string;
}

/** One run with the spend its budget counts (its own and its children's). */
export async function runView(store: JournalStore, params: { runId: string; namespace: string }): Promise<RunView> {
  const run = await store.runGet({ runId: params.runId, namespace: params.namespace });
  const spent = await runSpend({ store, runId: run.id, namespace: params.namespace });
  return { run, spentUsd: spent.totalUsd };
}

/** A page of runs, newest first. InvalidPageTokenError for a token of another listing or other filters. */
export async function runPage(store: JournalStore, params: RunPageParams): Promise<{ runs: RunView[]; nextPageToken: string }> {
  const { namespace, statuses, workflowName, parentRunId } = params;
  const labels = params.labels ?? {};
  // The filters a token is bound to (the same shape every replica hashes).
  const filter = {
    namespace, statuses: [...(statuses ?? [])].sort(), workflowName: workflowName ?? '', labels: Object.entries(labels).sort(), parentRunId: parentRunId ?? '',
  };
  const cursor = decodePageToken(params.pageToken, 'runs', filter);
  if (statuses !== undefined && statuses.length === 0) return { runs: [], nextPageToken: '' };
  const page = await store.runList({
    namespace, pageSize: params.pageSize, cursor, ...(statuses?.length ? { statuses } : {}), ...(workflowName ? { workflowName } : {}),
    ...(Object.keys(labels).length ? { labels } : {}), ...(parentRunId ? { parentRunId } : {}),
  });
  // Kept cheap: one summing read for the page, each run's own entries only (not its children's).
  const spent = await ownSpend({ store, namespace, runIds: page.runs.map((r) => r.id) });
  return {
    runs: page.runs.map((run) => ({ run, spentUsd: spent.get(run.id) ?? 0 })),
    nextPageToken: page.nextCursor ? encodePageToken('runs', filter, page.nextCursor) : '',
  };
}
