import { JournalFullError, RunStateError } from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus } from '../../journal/run.js';
import type {
  BufferedSignal, RunLeaseAcquireRunningResult, SignalDeliverParams, SignalDeliverResult, SignalInboxConsumeParams,
  SignalInboxConsumeResult, SignalInboxListParams, SuspensionListParams, SuspensionListResult, SuspensionOpenOldestParams,
} from '../store.js';
import { notASuspension } from '../store-errors.js';
import { assertEntriesFit, assertJsonStorable, assertStorableText } from '../write-checks.js';
import type { MemoryJournal } from './memory-journal.js';
import { clone, type MemoryRunTable } from './memory-run-table.js';
import { oldestOpenSuspension, openSignalWait, suspensionPage } from './memory-signals.js';

/* The memory store's suspension listing and signal inbox (SignalOps in suspension-params.ts documents each method). */
export class MemorySignalInbox {
  constructor(private readonly t: MemoryRunTable, private readonly journal: MemoryJournal) {}

  async suspensionList(params: SuspensionListParams): Promise<SuspensionListResult> {
    const page = suspensionPage(this.t.runs.values(), params);
    return { items: page.items.map(clone), nextCursor: page.nextCursor };
  }
  async suspensionOpenOldest(params: SuspensionOpenOldestParams): Promise<JournalEntry | null> {
    const entry = oldestOpenSuspension(this.t.record(params.runId, params.namespace), params.kind, params.name);
    return entry ? clone(entry) : null;
  }
  async signalDeliver(params: SignalDeliverParams): Promise<SignalDeliverResult> {
    assertJsonStorable('payload', params.payload, this.t.limits.payloadBytes);
    assertStorableText('name', params.name);
    assertStorableText('signalId', params.signalId);
    if (params.target) assertEntriesFit([params.target.entry], this.t.limits, 'entry');
    const rec = this.t.record(params.runId, params.namespace);
    const firstSeq = rec.dedupe.get(params.dedupeKey);
    if (firstSeq !== undefined) {
      const first = rec.entries[firstSeq]!;
      const winnerSeq = first.refSeq === null ? undefined : rec.winners.get(first.refSeq);
      return { outcome: 'duplicate', entry: clone(first), winner: winnerSeq === undefined ? null : clone(rec.entries[winnerSeq]!), signal: null };
    }
    const queued = rec.inbox.find((s) => s.signalId === params.signalId);
    if (queued) return { outcome: 'duplicate', entry: null, winner: null, signal: clone(queued) };
    if (isTerminalStatus(rec.run.status)) throw new RunStateError(rec.run.id, rec.run.status, 'not finished');
    const open = openSignalWait(rec, params.name);
    if (open !== null && !rec.inbox.some((s) => s.name === params.name)) {
      if (params.target?.seq !== open) return { outcome: 'wait_open', seq: open };
      // journalResolve does all its work before its first await: the delivery stays one atomic step,
      // and so does the take that follows it synchronously (before anything else reaches the run).
      const resolving = this.journal.journalResolve({
        runId: rec.run.id, suspensionSeq: open, entry: { ...params.target.entry, dedupeKey: params.dedupeKey },
      });
      let taken: RunLeaseAcquireRunningResult | null = null;
      if (params.leaseFor) {
        const { holder, ttlMs, routing } = params.leaseFor;
        const lease = this.t.acquire({ runId: rec.run.id, holder, ttlMs, statuses: ['PENDING'], ...(routing ? { routing } : {}) });
        if (lease) taken = { lease: lease.lease, ...this.t.changeStatus(lease.rec, 'RUNNING', {}) };
      }
      const resolved = await resolving;
      return { outcome: 'resolved', entry: resolved.entry, ...(params.leaseFor ? { taken } : {}) };
    }
    const signal: BufferedSignal = {
      runId: rec.run.id, name: params.name, signalId: params.signalId, payload: clone(params.payload), createdAt: this.t.now(),
    };
    rec.inbox.push(signal);
    return { outcome: 'buffered', signal: clone(signal) };
  }
  async signalInboxList(params: SignalInboxListParams): Promise<BufferedSignal[]> {
    const rec = this.t.record(params.runId, params.namespace);
    return rec.inbox.filter((s) => params.name === undefined || s.name === params.name).slice(0, params.limit).map(clone);
  }
  async signalInboxConsume(params: SignalInboxConsumeParams): Promise<SignalInboxConsumeResult> {
    assertEntriesFit([params.entry], this.t.limits, 'entry');
    const rec = this.t.fenced(params.lease);
    const at = rec.inbox.findIndex((s) => s.signalId === params.signalId);
    if (at < 0) return { entry: null, winner: null };
    const winnerSeq = rec.winners.get(params.suspensionSeq);
    if (winnerSeq !== undefined) return { entry: null, winner: clone(rec.entries[winnerSeq]!) };
    if (rec.entries[params.suspensionSeq]?.status !== 'suspended') throw notASuspension(rec.run.id, params.suspensionSeq);
    if (rec.run.nextSeq + 1 > this.t.limits.journalEntries) throw new JournalFullError(rec.run.id, this.t.limits.journalEntries);
    const [entry] = this.t.write(rec, [{ ...params.entry, status: params.valid ? 'resolved' : 'noop', refSeq: params.suspensionSeq }]);
    if (params.valid) rec.winners.set(params.suspensionSeq, entry!.seq);
    rec.inbox.splice(at, 1);
    this.t.wakeups.notify(rec.run.id, false);
    return { entry: clone(entry!), winner: params.valid ? clone(entry!) : null };
  }}
