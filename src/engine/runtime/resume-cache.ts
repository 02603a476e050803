// runtime/: the journals of runs that parked here, kept so their next execution here reads none of it again.
// Must not decide whether a kept journal is current on its own word: resume() proves it against the new lease.
import type { JournalEntry } from '../../journal/journal-entry.js';

/*
 * Hot resume (issue 22, docs/recovery.md "Hot resume"). A run that parks here (SUSPENDED, or
 * PENDING when a resolution landed while it ran) leaves its journal in this cache: what its
 * execution read, what it appended, the status entry that parked it. When this replica takes the
 * run again, the journal is the kept one plus what was written since, and what was written since
 * is known or small:
 * - the journal is append-only and its seqs are dense, so a kept prefix 0..n-1 is the run's
 *   entries 0..n-1 for ever, and the new RUNNING entry's seq says how many entries exist;
 * - only a lease holder rewrites what a run does next, and every lease taken bumps the epoch by
 *   one, so the new lease's epoch being the parked lease's epoch + 1 proves that nobody executed
 *   the run in between (another replica, the sweeper's recovery, a ResumeRun, a forced status);
 *   the only writes in between are lease-free resolutions (signals, decisions, deadlines, a
 *   child's end), appended after the kept prefix;
 * - resolutions this replica wrote itself are noted here (note()), so a resume after a signal
 *   sent to this replica reads no journal row; any other gap is read from the store (afterSeq),
 *   a few rows.
 * Anything else (another epoch, another definition digest, a kept journal longer than the run's)
 * is a miss, and the execution reads the whole journal as before. Bounded twice across runs, by
 * kept entries and by their estimated bytes (the payload bytes the run's executions journaled, the
 * run row's journalBytes, plus ENTRY_BYTES per entry), least recently parked evicted first; a run's
 * journal over either bound is never kept. The entry bound alone let 50,000 entries of 64 KiB
 * results (an agent's model calls) hold 3 GiB.
 */

export interface ResumeCacheOptions {
  /** Journal entries kept across all parked runs; 0 turns hot resume off. */
  maxEntries?: number;
  /** Estimated bytes kept across all parked runs (payloads plus ENTRY_BYTES per entry); 0 turns hot resume off. */
  maxBytes?: number;
}

export const RESUME_CACHE_DEFAULTS = { maxEntries: 50_000, maxBytes: 64 * 2 ** 20 } as const;

/** What a kept entry costs besides its payload: the entry and its strings, measured at about 270 bytes (docs/performance.md). */
export const ENTRY_BYTES = 400;

interface Parked {
  /** Entries 0..n-1 of the run's journal (dense, in seq order). */
  entries: JournalEntry[];
  /** What the entries are estimated to take (at the park; noted resolutions add ENTRY_BYTES each). */
  bytes: number;
  /** The epoch of the lease the run parked under. */
  epoch: number;
  /** The definition digest it executed against. */
  digest: string;
  /** Resolutions written by this replica since, after the kept prefix, by seq. */
  noted: Map<number, JournalEntry>;
  /** The open suspensions the execution parked on, in seq order. */
  waits: readonly JournalEntry[];
}

/** What resume() found: the journal up to (not including) the new RUNNING entry, and the first seq still to read. */
export type ResumeLookup =
  | { hit: true; entries: JournalEntry[]; readFrom: number }
  | { hit: false; reason: 'absent' | 'epoch' | 'digest' | 'longer' };

export interface ResumeCacheStats {
  hits: number;
  misses: number;
  evictions: number;
  /** Entries kept now. */
  entries: number;
  /** Their estimated bytes. */
  bytes: number;
  runs: number;
}

export class ResumeCache {
  readonly maxEntries: number;
  readonly maxBytes: number;
  private readonly runs = new Map<string, Parked>(); // insertion order: least recently parked first
  private kept = 0;
  private keptBytes = 0;
  private readonly counts = { hits: 0, misses: 0, evictions: 0 };

  constructor(options: ResumeCacheOptions = {}) {
    const maxEntries = options.maxEntries ?? RESUME_CACHE_DEFAULTS.maxEntries;
    if (!Number.isInteger(maxEntries) || maxEntries < 0) throw new RangeError(`maxEntries must be a whole number >= 0, got ${maxEntries}`);
    const maxBytes = options.maxBytes ?? RESUME_CACHE_DEFAULTS.maxBytes;
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`maxBytes must be a whole number >= 0, got ${maxBytes}`);
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
  }

  get stats(): ResumeCacheStats {
    return { ...this.counts, entries: this.kept, bytes: this.keptBytes, runs: this.runs.size };
  }

  /**
   * Keeps the journal of a run that just parked under `epoch`. `known` is every entry the execution
   * read or wrote, in any order; only the dense prefix from seq 0 is kept. `payloadBytes`: the
   * payload bytes the run's executions journaled (Run.journalBytes).
   */
  park(runId: string, params: { known: readonly JournalEntry[]; epoch: number; digest: string; payloadBytes: number; waits?: readonly JournalEntry[] }): void {
    this.drop(runId);
    if (this.maxEntries === 0 || this.maxBytes === 0) return;
    const entries = densePrefix(params.known);
    const bytes = params.payloadBytes + entries.length * ENTRY_BYTES;
    if (entries.length === 0 || entries.length > this.maxEntries || bytes > this.maxBytes) return;
    this.runs.set(runId, { entries, bytes, epoch: params.epoch, digest: params.digest, noted: new Map(), waits: params.waits ?? [] });
    this.kept += entries.length;
    this.keptBytes += bytes;
    for (const id of this.runs.keys()) {
      if (this.kept <= this.maxEntries && this.keptBytes <= this.maxBytes) break;
      this.drop(id);
      this.counts.evictions++;
    }
  }

  /** A resolution (or no-op) this replica appended to a parked run: the resume then needs not read it. */
  note(entry: JournalEntry | null | undefined): void {
    if (!entry) return;
    const parked = this.runs.get(entry.runId);
    if (!parked || entry.seq < parked.entries.length || parked.noted.has(entry.seq)) return;
    parked.noted.set(entry.seq, entry);
    parked.bytes += ENTRY_BYTES;
    this.kept++;
    this.keptBytes += ENTRY_BYTES;
  }

  /**
   * A guess at the oldest open wait of `kind` and `name` of a run parked here: the oldest one it
   * parked on that no resolution noted since closed. Only a guess (another replica may have closed
   * it, an older wait nobody awaits may still be open): signalSend hands it to signalDeliver, which
   * checks it against the store under the run's lock and answers `wait_open` when it is wrong.
   */
  openWait(runId: string, kind: string, name: string): JournalEntry | null {
    const parked = this.runs.get(runId);
    if (!parked) return null;
    const closed = new Set<number>();
    for (const entry of parked.noted.values()) if (entry.refSeq !== null && entry.status !== 'noop') closed.add(entry.refSeq);
    return parked.waits.find((w) => w.kind === kind && w.name === name && !closed.has(w.seq)) ?? null;
  }

  /**
   * Takes the kept journal of `runId` for an execution under `epoch` (the kept state is gone after
   * this call, hit or miss: one execution owns it). A hit proves nobody held a lease since the park.
   */
  resume(runId: string, params: { epoch: number; digest: string; runningSeq: number }): ResumeLookup {
    const parked = this.runs.get(runId);
    if (!parked) return this.miss('absent');
    this.drop(runId);
    if (params.epoch !== parked.epoch + 1) return this.miss('epoch');
    if (params.digest !== parked.digest) return this.miss('digest');
    if (parked.entries.length > params.runningSeq) return this.miss('longer');
    const entries = parked.entries;
    while (entries.length < params.runningSeq) {
      const next = parked.noted.get(entries.length);
      if (!next) break;
      entries.push(next);
    }
    this.counts.hits++;
    return { hit: true, entries, readFrom: entries.length };
  }

  /** Forgets a run (it ended, or its state here is no longer trusted). */
  drop(runId: string): void {
    const parked = this.runs.get(runId);
    if (!parked) return;
    this.runs.delete(runId);
    this.kept -= parked.entries.length + parked.noted.size;
    this.keptBytes -= parked.bytes;
  }

  private miss(reason: 'absent' | 'epoch' | 'digest' | 'longer'): ResumeLookup {
    this.counts.misses++;
    return { hit: false, reason };
  }
}

/** Entries 0..n-1 from `known` (duplicates by seq are the same entry), stopping at the first gap. */
function densePrefix(known: readonly JournalEntry[]): JournalEntry[] {
  const bySeq: (JournalEntry | undefined)[] = [];
  for (const entry of known) bySeq[entry.seq] = entry;
  const out: JournalEntry[] = [];
  for (const entry of bySeq) {
    if (!entry) break;
    out.push(entry);
  }
  return out;
}
