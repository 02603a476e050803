import { JournalFullError, RunStateError } from '../../journal/errors.js';
import type { JournalEntry, PayloadRef } from '../../journal/journal-entry.js';
import type { Limits } from '../../journal/limits.js';
import { isTerminalStatus } from '../../journal/run.js';
import type {
  JournalAppendParams, JournalCostTotalsParams, JournalCostTotalsResult, JournalListParams, JournalResolveParams,
  JournalResolveResult, JournalSpendParams, RunLeaseAcquireRunningResult, JournalSpendResult, JournalWait, JournalWaitsParams,
} from '../store.js';
import { duplicateDedupeKey, notASuspension } from '../store-errors.js';
import { assertEntriesFit, suspensionDeadline } from '../write-checks.js';
import { payloadSha256, referenced, storedOutOfLine } from '../payload-refs.js';
import { clone, type MemoryRunTable, type RunRecord } from './memory-run-table.js';

/*
 * The memory store's journal: fenced appends, reads, resolutions from outside (JournalOps in
 * journal-params.ts documents each method). journalResolve does all its work before its first
 * await: signalDeliver and remote task results rely on that to stay one atomic step.
 */
export class MemoryJournal {
  constructor(private readonly t: MemoryRunTable) {}

  async journalAppend(params: JournalAppendParams): Promise<JournalEntry[]> {
    const bytes = assertEntriesFit(params.entries, this.t.limits).reduce((a, b) => a + b, 0);
    params.entries.forEach(suspensionDeadline); // refuses a malformed deadline before writing
    const rec = this.t.fenced(params.lease);
    if (rec.run.nextSeq + params.entries.length > this.t.limits.journalEntries) {
      throw new JournalFullError(rec.run.id, this.t.limits.journalEntries);
    }
    if (rec.run.journalBytes + bytes > this.t.limits.journalBytes) {
      throw new JournalFullError(rec.run.id, this.t.limits.journalEntries, this.t.limits.journalBytes);
    }
    const seen = new Set<string>();
    for (const e of params.entries) {
      if (e.dedupeKey === null) continue;
      if (rec.dedupe.has(e.dedupeKey) || seen.has(e.dedupeKey)) throw duplicateDedupeKey(rec.run.id, e.dedupeKey);
      seen.add(e.dedupeKey);
    }
    const written = this.t.write(rec, params.entries);
    rec.run.journalBytes += bytes;
    rec.run.recoveryCount = 0; // progress: the recoveries before it did not fail (store.ts runRecoverExpired)
    this.t.wakeups.notify(rec.run.id, false);
    return written.map(clone);
  }
  async journalList(params: JournalListParams): Promise<JournalEntry[]> {
    const rec = this.t.record(params.runId, params.namespace);
    const from = Math.max(0, (params.afterSeq ?? -1) + 1);
    const to = params.limit === undefined ? undefined : from + Math.max(0, params.limit);
    const page = rec.entries.slice(from, to);
    if (params.payloads !== 'reference') return page.map(clone);
    // Entries are kept whole here; which payloads PostgreSQL keeps out of line is decided the same way.
    return page.map((e) => referenced(clone(e), outOfLineRef(e, this.t.limits)));
  }
  async journalCostTotals(params: JournalCostTotalsParams): Promise<JournalCostTotalsResult> {
    const totals = new Map<string, number>();
    for (const runId of params.runIds) {
      const rec = this.t.runs.get(runId);
      if (!rec || (params.namespace !== undefined && rec.run.namespace !== params.namespace)) continue;
      totals.set(runId, rec.entries.reduce((sum, e) => sum + (e.costUsd ?? 0), 0));
    }
    return totals;
  }
  async journalWaits(params: JournalWaitsParams): Promise<JournalWait[]> {
    const rec = this.t.record(params.runId, params.namespace);
    return rec.entries
      .filter((e) => e.status === 'suspended' && (params.seq === undefined || e.seq === params.seq))
      .map((entry) => ({ entry: clone(entry), referrers: rec.entries.filter((e) => e.refSeq === entry.seq).map((e) => clone(e)) }));
  }
  async journalSpend(params: JournalSpendParams): Promise<JournalSpendResult> {
    const root = this.t.record(params.runId, params.namespace);
    const result: JournalSpendResult = { ownUsd: 0, childrenUsd: 0, pricedCalls: 0, reservedUsd: 0 };
    const visit = (rec: RunRecord, depth: number): void => {
      const open = new Map<number, number>();
      for (const e of rec.entries) {
        if (e.costUsd !== null) {
          if (rec === root) result.ownUsd += e.costUsd;
          else result.childrenUsd += e.costUsd;
          result.pricedCalls++;
        }
        const usd = (e.payload as { estimatedCostUsd?: unknown } | null)?.estimatedCostUsd;
        if (e.kind === 'model' && e.status === 'running' && typeof usd === 'number' && Number.isFinite(usd) && usd > 0) open.set(e.seq, usd);
        else if (e.refSeq !== null) open.delete(e.refSeq);
      }
      for (const usd of open.values()) result.reservedUsd += usd;
      if (depth >= params.maxDepth) return;
      for (const child of this.t.runs.values()) {
        if (child.run.parentRunId === rec.run.id && child.run.namespace === params.namespace) visit(child, depth + 1);
      }
    };
    visit(root, 0);
    return result;
  }
  async journalResolve(params: JournalResolveParams): Promise<JournalResolveResult> {
    assertEntriesFit([params.entry], this.t.limits, 'entry');
    this.t.sweeperFence(params.leader);
    const rec = this.t.record(params.runId, params.namespace);
    const key = params.entry.dedupeKey;
    const firstSeq = key === null ? undefined : rec.dedupe.get(key);
    if (firstSeq !== undefined) {
      const first = rec.entries[firstSeq]!;
      const winnerSeq = first.refSeq === null ? undefined : rec.winners.get(first.refSeq);
      const winner = winnerSeq === undefined ? first : rec.entries[winnerSeq]!;
      return { entry: clone(first), applied: first.status === 'resolved', duplicate: true, winner: clone(winner) };
    }
    const run = rec.run;
    if (isTerminalStatus(run.status)) throw new RunStateError(run.id, run.status, 'not finished');
    if (rec.entries[params.suspensionSeq]?.status !== 'suspended') {
      throw notASuspension(run.id, params.suspensionSeq);
    }
    if (run.nextSeq + 1 > this.t.limits.journalEntries) throw new JournalFullError(run.id, this.t.limits.journalEntries);
    const winnerSeq = rec.winners.get(params.suspensionSeq);
    const applied = winnerSeq === undefined;
    const [entry] = this.t.write(rec, [{
      ...params.entry, status: applied ? 'resolved' : 'noop', refSeq: params.suspensionSeq,
    }]);
    let becamePending = false;
    if (applied) {
      rec.winners.set(params.suspensionSeq, entry!.seq);
      if (run.status === 'SUSPENDED') {
        run.status = 'PENDING';
        becamePending = true;
      } else if (run.status === 'RUNNING') {
        rec.resumeRequested = true;
      }
    }
    // The take (leaseFor) in the same synchronous step as the resolution: nothing else reaches the run between them.
    let taken: RunLeaseAcquireRunningResult | null = null;
    if (applied && params.leaseFor) {
      const { holder, ttlMs, routing } = params.leaseFor;
      const lease = this.t.acquire({ runId: run.id, holder, ttlMs, statuses: ['PENDING'], ...(routing ? { routing } : {}) });
      if (lease) taken = { lease: lease.lease, ...this.t.changeStatus(lease.rec, 'RUNNING', {}) };
    }
    this.t.wakeups.notify(run.id, becamePending && taken === null);
    const winner = applied ? entry! : rec.entries[winnerSeq!]!;
    return { entry: clone(entry!), applied, duplicate: false, winner: clone(winner), ...(params.leaseFor && applied ? { taken } : {}) };
  }}

/** Entries already measured: a kept entry never changes, so each is hashed once, not on every page. */
const measured = new WeakMap<JournalEntry, PayloadRef | null>();

/** The reference of an entry whose payload PostgreSQL would keep out of line, or null. */
function outOfLineRef(entry: JournalEntry, limits: Limits): PayloadRef | null {
  if (entry.payload === null || !storedOutOfLine(entry, limits.payloadInlineBytes + 1, limits)) return null;
  const known = measured.get(entry);
  if (known !== undefined) return known;
  const text = JSON.stringify(entry.payload);
  const sizeBytes = Buffer.byteLength(text, 'utf8');
  const ref = storedOutOfLine(entry, sizeBytes, limits) ? { sha256: payloadSha256(text), sizeBytes } : null;
  measured.set(entry, ref);
  return ref;
}
