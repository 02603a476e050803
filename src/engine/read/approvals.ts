// read/: approvals as people see them (list, get), read from `approval` suspensions and their resolutions.
// Read-only: must not write the journal (deciding one is resolutions.ts).
import { RunNotFoundError } from '../../journal/errors.js';
import { isTerminalStatus, type Json } from '../../journal/run.js';
import type { JournalStore, JournalWait, SuspensionListItem } from '../../store/store.js';
import { ApprovalNotFoundError } from '../errors.js';
import { approvalId, parseApprovalId, resolutionPayload, suspensionPayload } from '../runtime/suspension.js';

/*
 * Approvals as people see them (ListApprovals, GetApproval): an approval is a `suspended` entry of
 * kind `approval`; its state is read from the winning resolution (docs/journal.md "Suspensions").
 */

export const APPROVAL_STATES = ['PENDING', 'APPROVED', 'DENIED', 'TIMED_OUT', 'CANCELLED'] as const;
export type ApprovalState = (typeof APPROVAL_STATES)[number];

export interface ApprovalView {
  /** `<run id>:<seq>`, what DecideApproval takes. */
  id: string;
  runId: string;
  seq: number;
  workflowName: string;
  title: string;
  description: string | null;
  /** JSON Schema the decision must satisfy (pinned when the run asked). */
  schema: Json;
  /**
   * PENDING while undecided; APPROVED / DENIED by a person; TIMED_OUT when the deadline applied its
   * default; CANCELLED when the run ended undecided, or an invalidation replaced this approval.
   */
  state: ApprovalState;
  decidedBy: string | null;
  /** The API key that decided (journaled with the decision); null while pending, for a timeout, or with authentication off. */
  decidedByKeyId: string | null;
  comment: string | null;
  /** The winning decision's value (`{ approved, comment?, … }`); null while pending. */
  decision: Json | null;
  decidedAt: Date | null;
  deadlineAt: Date | null;
  /** What the deadline decides; null when there is no deadline. */
  onTimeout: 'approve' | 'deny' | null;
  labels: Record<string, string>;
  createdAt: Date;
}

export interface ApprovalListParams {
  namespace: string;
  runId?: string;
  workflowName?: string;
  labels?: Record<string, string>;
  /** Empty or absent: PENDING only. */
  states?: ApprovalState[];
  pageSize: number;
  cursor?: string | null;
}

/** Store pages one listing call reads at most while filtering by state; then it returns a short page. */
const MAX_STORE_PAGES = 20;

/**
 * Approvals oldest first. States other than PENDING are derived from resolutions, so the store
 * narrows by open/closed and this filters the rest, reading further store pages (up to a bound)
 * to fill the page. The cursor always points just after the last approval examined.
 */
export async function approvalList(store: JournalStore, params: ApprovalListParams): Promise<{ approvals: ApprovalView[]; nextCursor: string | null }> {
  const states = new Set<ApprovalState>(params.states?.length ? params.states : ['PENDING']);
  const open = states.size === 1 && states.has('PENDING') ? true : states.has('PENDING') ? undefined : false;
  const approvals: ApprovalView[] = [];
  let cursor = params.cursor ?? null;
  for (let pages = 0; pages < MAX_STORE_PAGES && approvals.length < params.pageSize; pages++) {
    const page = await store.suspensionList({
      namespace: params.namespace, kinds: ['approval'], pageSize: params.pageSize - approvals.length, cursor,
      ...(open === undefined ? {} : { open }),
      ...(params.runId !== undefined ? { runId: params.runId } : {}),
      ...(params.workflowName !== undefined ? { workflowName: params.workflowName } : {}),
      ...(params.labels !== undefined ? { labels: params.labels } : {}),
    });
    approvals.push(...page.items.map(approvalOf).filter((a) => states.has(a.state)));
    cursor = page.nextCursor;
    if (cursor === null) break;
  }
  return { approvals, nextCursor: cursor };
}

/** One approval by id; ApprovalNotFoundError for an unknown or malformed id, or one in another namespace. */
export async function approvalGet(store: JournalStore, params: { namespace: string; approvalId: string }): Promise<ApprovalView> {
  const address = parseApprovalId(params.approvalId);
  if (!address) throw new ApprovalNotFoundError(params.approvalId);
  let run;
  let wait: JournalWait | undefined;
  try {
    run = await store.runGet({ runId: address.runId, namespace: params.namespace });
    // The one entry and what refers to it, not the run's journal (issue 22).
    [wait] = await store.journalWaits({ runId: address.runId, namespace: params.namespace, seq: address.seq });
  } catch (err) {
    if (err instanceof RunNotFoundError) throw new ApprovalNotFoundError(params.approvalId);
    throw err;
  }
  if (!wait || wait.entry.kind !== 'approval' || wait.entry.status !== 'suspended') throw new ApprovalNotFoundError(params.approvalId);
  const { entry, referrers: pointing } = wait;
  return approvalOf({
    entry,
    winner: pointing.find((e) => e.status === 'resolved') ?? null,
    superseded: pointing.some((e) => e.status === 'cancelled'),
    run: { id: run.id, namespace: run.namespace, workflowName: run.workflowName, status: run.status, labels: run.labels },
  });
}

export function approvalOf(item: SuspensionListItem): ApprovalView {
  const { entry, winner } = item;
  const request = suspensionPayload(entry);
  const r = winner ? resolutionPayload(winner) : null;
  const value = r?.value !== null && typeof r?.value === 'object' && !Array.isArray(r.value) ? r.value : null;
  let state: ApprovalState;
  if (r) state = r.source === 'timeout' ? 'TIMED_OUT' : value?.approved === true ? 'APPROVED' : 'DENIED';
  else state = item.superseded || isTerminalStatus(item.run.status) ? 'CANCELLED' : 'PENDING';
  const onTimeout = request.onTimeout;
  const timeoutApproves = onTimeout !== null && typeof onTimeout === 'object' && !Array.isArray(onTimeout) && onTimeout.approved === true;
  return {
    id: approvalId(entry.runId, entry.seq),
    runId: entry.runId,
    seq: entry.seq,
    workflowName: item.run.workflowName,
    title: request.title ?? entry.name,
    description: request.description ?? null,
    schema: request.schema ?? {},
    state,
    decidedBy: r?.by ?? null,
    decidedByKeyId: r?.keyId ?? null,
    comment: typeof value?.comment === 'string' ? value.comment : null,
    decision: r?.value ?? null,
    decidedAt: winner ? winner.createdAt : null,
    deadlineAt: request.deadlineAt ? new Date(request.deadlineAt) : null,
    onTimeout: request.deadlineAt ? (timeoutApproves ? 'approve' : 'deny') : null,
    labels: item.run.labels,
    createdAt: entry.createdAt,
  };
}
