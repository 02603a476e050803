// scheduling/: the replica's in-memory timers: deadlines of runs that parked here, due soon, resolved on time.
// Must not execute a run nor write anything the sweeper would not: it makes suspensionTimeOut's write, then says so.
import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { RunDriver } from '../runtime/run-driver.js';
import { suspensionTimeOut } from '../runtime/resolutions.js';
import { openWaits, suspensionPayload } from '../runtime/suspension.js';
import { DeadlineHeap } from './deadline-heap.js';

/*
 * DESIGN third wave: "a timer is a deadline in the store first". Every wait with a deadline (a sleep,
 * a retry backoff, an approval or signal deadline, a remote tool's timeout) is a suspension whose
 * payload carries `deadlineAt`, and the sweeper resolves it at its next pass (every 5 s by default).
 * This class saves that wait: when a run parks on this replica, the deadlines due within `horizonMs`
 * go into one min-heap with one process timer for the earliest, and when it is due this replica
 * makes the sweeper's own write (suspensionTimeOut: dedupe key `timeout:<seq>`, decided under the
 * run-row lock), so the timer, a signal and the sweeper racing for one wait resolve it once. A run
 * the write made PENDING is claimed like any other (the store's NOTIFY wakes every executor; the
 * `fired` event wakes this one at once). Deadlines further out, and those of a replica that died,
 * stay the sweeper's: nothing here is needed for correctness, only for promptness, and 100,000 runs
 * parked on hour-long timers cost nothing here. Shape: STYLE habit 11.
 */

export interface DueTimersOptions {
  /** Whose `parked` events arm timers, and whose store and clock fire them. */
  driver: RunDriver;
  /** Deadlines due within this long of parking are held in memory; later ones are left to the sweeper. */
  horizonMs?: number;
  logger?: Logger;
}

export const DUE_TIMERS_DEFAULTS = { horizonMs: 60_000 } as const;

/** The longest a process timer may be set for (setTimeout's limit). */
const MAX_TIMER_MS = 2_147_483_647;

export interface DueTimersEvents {
  /** A deadline was taken into memory. */
  held: [{ runId: string; seq: number; deadlineAt: Date }];
  /** A held deadline passed on the store's clock; its resolution is written next (tests race it here). */
  due: [{ runId: string; namespace: string; seq: number }];
  /** A held deadline passed and was resolved; `applied` false: something else closed the wait first (nothing written, or a `noop`). */
  fired: [{ runId: string; namespace: string; seq: number; kind: string; applied: boolean }];
  /**
   * Firing failed (the store is unavailable); the timer is left to the sweeper. Not named `error`:
   * an EventEmitter throws an `error` event nobody listens to, which killed a replica whose timer
   * fired while PostgreSQL restarted (test/chaos/postgres-restart.test.ts).
   */
  failed: [{ runId: string; seq: number; error: unknown }];
}

interface HeldTimer {
  runId: string;
  namespace: string;
  suspension: JournalEntry;
}

export class DueTimers {
  readonly events = new EventEmitter<DueTimersEvents>();
  readonly horizonMs: number;
  private readonly driver: RunDriver;
  private readonly logger: Logger;
  private readonly heap = new DeadlineHeap<HeldTimer>();
  /** The seqs of each run's held timers: a wait parked twice is held once, and a run that executes again here drops its own (lazily: the heap skips them). */
  private readonly keys = new Map<string, Set<number>>();
  /** The store's clock minus this process's, as last read: what a process timer is set against. */
  private skewMs = 0;
  private timer: NodeJS.Timeout | null = null;
  private armedFor = Number.POSITIVE_INFINITY;
  /** The clock read and pop of the firing in progress: the next timer is armed once it is done, not after its writes. */
  private firing: Promise<void> | null = null;
  /** Resolutions being written (stop waits for them). */
  private readonly writing = new Set<Promise<unknown>>();
  private state: 'new' | 'running' | 'stopped' = 'new';
  private readonly onParked = (p: { runId: string; namespace: string; waits: JournalEntry[] }): void => this.hold(p);
  /** The run executes again here: whatever it still waits on, it parks on again (and is held again then). */
  private readonly onLease = (p: { runId: string }): void => {
    this.keys.delete(p.runId);
  };

  constructor(options: DueTimersOptions) {
    const horizonMs = options.horizonMs ?? DUE_TIMERS_DEFAULTS.horizonMs;
    if (!Number.isInteger(horizonMs) || horizonMs < 0) throw new RangeError(`horizonMs must be a whole number >= 0, got ${horizonMs}`);
    this.horizonMs = horizonMs;
    this.driver = options.driver;
    this.logger = (options.logger ?? pino({ enabled: false })).child({ component: 'due-timers' });
  }

  /** Timers held now. */
  get size(): number {
    return this.heap.size;
  }

  start(): void {
    if (this.state !== 'new') throw new Error(`due timers already ${this.state}`);
    this.state = 'running';
    this.driver.events.on('parked', this.onParked);
    this.driver.events.on('lease-acquired', this.onLease);
    this.logger.info({ horizonMs: this.horizonMs }, 'due timers started');
  }

  /** Drops every held timer (the sweeper fires them) after the firing in progress ends. */
  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    this.driver.events.off('parked', this.onParked);
    this.driver.events.off('lease-acquired', this.onLease);
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.firing;
    await Promise.all(this.writing);
    this.heap.clear();
    this.keys.clear();
  }

  /** Takes the deadlines among `waits` that fall within the horizon. */
  hold(params: { runId: string; namespace: string; waits: JournalEntry[] }): void {
    if (this.state !== 'running') return;
    const now = Date.now() + this.skewMs;
    for (const suspension of params.waits) {
      const iso = suspensionPayload(suspension).deadlineAt;
      if (typeof iso !== 'string') continue;
      const due = Date.parse(iso);
      const seqs = this.keys.get(params.runId) ?? new Set<number>();
      if (!Number.isFinite(due) || due - now > this.horizonMs || seqs.has(suspension.seq)) continue;
      seqs.add(suspension.seq);
      this.keys.set(params.runId, seqs);
      this.heap.push(due, { runId: params.runId, namespace: params.namespace, suspension });
      this.events.emit('held', { runId: params.runId, seq: suspension.seq, deadlineAt: new Date(due) });
    }
    this.arm();
  }

  /** Sets the one process timer for the earliest held deadline (or leaves the one set for it). */
  private arm(): void {
    if (this.state !== 'running' || this.firing) return;
    const next = this.heap.peekDeadline();
    if (next === null) return;
    if (this.timer && next >= this.armedFor) return;
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = next;
    const delay = Math.min(Math.max(next - (Date.now() + this.skewMs), 0), MAX_TIMER_MS);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.armedFor = Number.POSITIVE_INFINITY;
      this.firing = this.fire().finally(() => {
        this.firing = null;
        this.arm();
      });
    }, delay);
    this.timer.unref();
  }

  /**
   * Fires every held deadline that passed on the store's clock (read once per firing, so a process
   * clock running ahead never resolves a wait early: such timers go back to the heap).
   */
  private async fire(): Promise<void> {
    let storeNow: number;
    try {
      storeNow = (await this.driver.clock()).getTime();
    } catch (error) {
      // The store is unreachable: so is any write; look again shortly (the sweeper is the guarantee).
      this.logger.warn({ err: error }, 'due timers could not read the store clock; retrying shortly');
      this.skewMs -= 1_000;
      return;
    }
    this.skewMs = storeNow - Date.now();
    const due = this.heap.popDue(storeNow);
    // The writes go on without holding the next timer back: one due while they run fires on time.
    const writes = Promise.all(due.map(async (t) => {
      const { runId, namespace, suspension } = t;
      const seqs = this.keys.get(runId);
      if (!seqs?.delete(suspension.seq)) return; // dropped: the run executed here again since
      if (seqs.size === 0) this.keys.delete(runId);
      this.events.emit('due', { runId, namespace, seq: suspension.seq });
      try {
        // A wait someone else may close (an approval, a signal, a remote tool) is looked at first, so
        // one closed long ago journals no losing `noop` timeout (the sweeper lists open waits only).
        if (!onlyTimerCloses(suspension)) {
          const [wait] = await this.driver.store.journalWaits({ runId, namespace, seq: suspension.seq });
          if (!wait || openWaits([wait]).length === 0) {
            this.events.emit('fired', { runId, namespace, seq: suspension.seq, kind: suspension.kind, applied: false });
            return;
          }
        }
        const applied = await suspensionTimeOut(this.driver.store, suspension, this.logger);
        this.events.emit('fired', { runId, namespace, seq: suspension.seq, kind: suspension.kind, applied: applied === true });
      } catch (error) {
        this.logger.warn({ runId, seq: suspension.seq, err: error }, 'a due timer could not be resolved here; the sweeper resolves it');
        this.events.emit('failed', { runId, seq: suspension.seq, error });
      }
    }));
    this.writing.add(writes);
    void writes.finally(() => this.writing.delete(writes));
  }
}

/** A sleep or a retry backoff: nothing but its deadline resolves it, so there is nothing to look at before firing. */
function onlyTimerCloses(suspension: JournalEntry): boolean {
  const key = suspensionPayload(suspension).key;
  return key === 'sleep' || key === 'retry';
}
