import type { JournalEntry, NewJournalEntry } from '../../journal/journal-entry.js';
import type { Lease } from '../../journal/run.js';

/*
 * Group commit across runs. An execution appends one batch at a time (execution.ts), but many
 * executions share a replica: appends that arrive while `maxInFlight` statements are already
 * running wait, and go together as one statement (one transaction, one WAL flush) when a slot
 * frees. With nothing in flight an append goes at once, so a lone run pays no extra latency.
 */

export interface AppendRequest {
  lease: Lease;
  entries: NewJournalEntry[];
  deadlines: (Date | null)[];
  /** Bytes of the entries' payloads (limits.journalBytes counts them). */
  bytes: number;
}

interface Waiting extends AppendRequest {
  resolve: (entries: JournalEntry[]) => void;
  reject: (error: unknown) => void;
}

export class AppendBatcher {
  private readonly waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly options: {
      maxInFlight: number;
      maxBatch: number;
      /** Appends the batch: one result per request, in order (entries, or the error for that request). */
      send: (batch: AppendRequest[]) => Promise<(JournalEntry[] | { error: unknown })[]>;
    },
  ) {}

  append(request: AppendRequest): Promise<JournalEntry[]> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ ...request, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.options.maxInFlight && this.waiting.length > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.options.send(batch).then(
        (results) => batch.forEach((w, i) => {
          const r = results[i]!;
          if (Array.isArray(r)) w.resolve(r);
          else w.reject(r.error);
        }),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      ).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  /** The oldest waiting appends, one per run (two executions of one run never share a statement). */
  private take(): Waiting[] {
    const batch: Waiting[] = [];
    const runs = new Set<string>();
    for (let i = 0; i < this.waiting.length && batch.length < this.options.maxBatch;) {
      const w = this.waiting[i]!;
      if (runs.has(w.lease.runId)) {
        i++;
        continue;
      }
      runs.add(w.lease.runId);
      batch.push(w);
      this.waiting.splice(i, 1);
    }
    return batch;
  }
}
