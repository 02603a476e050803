// runtime/: the journal append queue of one Execution: entries land in call order, and appends queued
// while a write is in flight go to the store together (group commit of effects in flight).
// Must not decide anything about the run: stopping on a failure is the Execution's (execution.ts).
import { JournalFullError, PayloadTooLargeError, UnstorableValueError } from '../../journal/errors.js';
import type { JournalEntry, NewJournalEntry } from '../../journal/journal-entry.js';
import type { Lease } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';

/** What the queue reads of its execution, at each turn: the lease to fence with, and whether it is over. */
export interface AppendOwner {
  readonly lease: Lease | null;
  readonly over: boolean;
}

export type ProduceEntries = () => NewJournalEntry[] | Promise<NewJournalEntry[]>;

interface QueuedAppend {
  produce: ProduceEntries;
  /** null: the execution ended before its turn; nothing was written. */
  resolve: (entries: JournalEntry[] | null) => void;
  reject: (error: unknown) => void;
}

interface Group {
  queued: QueuedAppend;
  entries: NewJournalEntry[];
}

export class AppendQueue {
  private readonly queue: QueuedAppend[] = [];
  private flushing = false;

  constructor(
    private readonly store: JournalStore,
    private readonly owner: AppendOwner,
  ) {}

  /**
   * Queues one append; `produce` runs when its turn comes (so it may read the clock). Resolves with
   * the written entries, or null when the execution ended before the turn (nothing written);
   * rejects with the store's error (a refusal wrote nothing; anything else may have).
   */
  push(produce: ProduceEntries): Promise<JournalEntry[] | null> {
    return new Promise<JournalEntry[] | null>((resolve, reject) => {
      this.queue.push({ produce, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  /**
   * Writes the queue. Appends queued while a write is in flight go together as one store append
   * (one commit for effects that finish together: Promise.all over steps, an agent's parallel tool
   * calls), in queue order, so the journal holds what one-by-one appends would have written.
   */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const groups: Group[] = [];
        for (const queued of this.queue.splice(0)) {
          if (this.owner.over) {
            queued.resolve(null);
            continue;
          }
          try {
            groups.push({ queued, entries: await queued.produce() });
          } catch (error) {
            queued.reject(error);
          }
        }
        await this.write(groups);
      }
    } finally {
      this.flushing = false;
    }
  }

  /** One store append for all the groups; a refusal of the whole (nothing written) is retried one by one, so it reaches only its own call. */
  private async write(groups: Group[]): Promise<void> {
    if (groups.length > 1 && !this.owner.over) {
      try {
        const all = await this.store.journalAppend({ lease: this.owner.lease!, entries: groups.flatMap((g) => g.entries) });
        let at = 0;
        for (const { queued, entries } of groups) {
          queued.resolve(all.slice(at, at + entries.length));
          at += entries.length;
        }
        return;
      } catch (error) {
        if (!isRefusal(error)) {
          for (const { queued } of groups) queued.reject(error);
          return;
        }
      }
    }
    for (const { queued, entries } of groups) {
      if (this.owner.over) {
        queued.resolve(null);
        continue;
      }
      try {
        queued.resolve(await this.store.journalAppend({ lease: this.owner.lease!, entries }));
      } catch (error) {
        queued.reject(error);
      }
    }
  }
}

/** Store errors that wrote nothing and will refuse the same write again: the workflow handles them. */
export function isRefusal(error: unknown): boolean {
  return error instanceof PayloadTooLargeError || error instanceof JournalFullError || error instanceof UnstorableValueError;
}
