import type { JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type Run } from '../../journal/run.js';
import { assertPageSize } from '../run-cursor.js';
import type { SuspensionListItem, SuspensionListParams } from '../store.js';
import {
  compareSuspensionPosition, decodeSuspensionCursor, encodeSuspensionCursor, type SuspensionCursor,
} from '../suspension-cursor.js';

/*
 * The memory store's reads behind suspensionList and the signal inbox: pure functions over its
 * run records, kept apart so memory-store.ts stays a list of methods.
 */

/** What these helpers read of a memory run record. */
export interface SuspensionSource {
  run: Run;
  entries: JournalEntry[];
  /** suspension seq -> seq of its winning resolution */
  winners: Map<number, number>;
}

/** Whether a `cancelled` entry (an invalidation) points at the entry at `seq`. */
function superseded(rec: SuspensionSource, seq: number): boolean {
  return rec.entries.some((e) => e.status === 'cancelled' && e.refSeq === seq);
}

/**
 * The earliest open suspension of `kind` named `name`, as the store defines open (store.ts
 * signalDeliver, suspensionOpenOldest): no winning resolution and no `cancelled` entry points at it.
 */
export function oldestOpenSuspension(rec: SuspensionSource, kind: string, name: string): JournalEntry | null {
  let cancelled: Set<number> | null = null;
  for (const e of rec.entries) {
    if (e.kind !== kind || e.name !== name || e.status !== 'suspended' || rec.winners.has(e.seq)) continue;
    cancelled ??= new Set(rec.entries.flatMap((c) => (c.status === 'cancelled' && c.refSeq !== null ? [c.refSeq] : [])));
    if (!cancelled.has(e.seq)) return e;
  }
  return null;
}

/** Every open suspension of `kind`, in seq order (the approvals a run parks on). */
export function openSuspensions(rec: SuspensionSource, kind: string): JournalEntry[] {
  const cancelled = new Set(rec.entries.flatMap((c) => (c.status === 'cancelled' && c.refSeq !== null ? [c.refSeq] : [])));
  return rec.entries.filter((e) => e.kind === kind && e.status === 'suspended' && !rec.winners.has(e.seq) && !cancelled.has(e.seq));
}

/** The seq of the earliest open `signal` wait named `name`. */
export function openSignalWait(rec: SuspensionSource, name: string): number | null {
  return oldestOpenSuspension(rec, 'signal', name)?.seq ?? null;
}

function position(entry: JournalEntry): SuspensionCursor {
  return { createdAtMicros: BigInt(entry.createdAt.getTime()) * 1000n, runId: entry.runId, seq: entry.seq };
}

/** One page of suspensionList over every record (the values are the store's own: clone them out). */
export function suspensionPage(
  records: Iterable<SuspensionSource>, params: SuspensionListParams,
): { items: SuspensionListItem[]; nextCursor: string | null } {
  assertPageSize(params.pageSize);
  const after = params.cursor ? decodeSuspensionCursor(params.cursor) : null;
  const labels = Object.entries(params.labels ?? {});
  const found: SuspensionListItem[] = [];
  for (const rec of records) {
    const { run } = rec;
    if (run.namespace !== params.namespace || (params.runId !== undefined && run.id !== params.runId)) continue;
    if (params.workflowName !== undefined && run.workflowName !== params.workflowName) continue;
    if (!labels.every(([k, v]) => run.labels[k] === v)) continue;
    for (const entry of rec.entries) {
      if (entry.status !== 'suspended' || (params.kinds?.length && !params.kinds.includes(entry.kind))) continue;
      if (after && compareSuspensionPosition(position(entry), after) <= 0) continue;
      const winnerSeq = rec.winners.get(entry.seq);
      const item: SuspensionListItem = {
        entry,
        winner: winnerSeq === undefined ? null : rec.entries[winnerSeq]!,
        superseded: superseded(rec, entry.seq),
        run: { id: run.id, namespace: run.namespace, workflowName: run.workflowName, status: run.status, labels: run.labels },
      };
      const open = item.winner === null && !item.superseded && !isTerminalStatus(run.status);
      if (params.open !== undefined && params.open !== open) continue;
      found.push(item);
    }
  }
  found.sort((a, b) => compareSuspensionPosition(position(a.entry), position(b.entry)));
  const page = found.slice(0, params.pageSize);
  const last = page[page.length - 1];
  return { items: page, nextCursor: found.length > params.pageSize && last ? encodeSuspensionCursor(position(last.entry)) : null };
}
