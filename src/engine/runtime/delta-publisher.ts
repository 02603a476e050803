// runtime/: the token deltas of one model call attempt, written to the store in small batches as they arrive.
// Must not touch the journal nor fail the call: deltas are not the journal (DESIGN third wave), a failed write only loses deltas.
import type { Logger } from 'pino';
import type { JournalStore, NewModelDelta } from '../../store/store.js';
import type { ModelDeltaSink } from '../author/agent-contract.js';

/*
 * One attempt of one model call publishes its deltas here (docs/agents.md "Token streams"). Writes
 * go out one batch at a time: a delta that arrives while no write is in flight is written at once
 * (the first token's latency is one insert), and the deltas that arrive while a write is in flight
 * make the next batch (so a fast stream costs one insert per round trip, not one per token). The
 * attempt's first delta is its `start` (index 0), so a client sees an attempt begin even when it
 * yields no text, and a newer attempt of the same call tells it the older one was aborted.
 * flush() waits for everything pushed so far: the agent host awaits it before the call's result is
 * journaled, so every delta of the final attempt commits before the result entry.
 */

export const DELTA_BATCH_MAX = 256;

export class DeltaPublisher implements ModelDeltaSink {
  private readonly queue: NewModelDelta[] = [];
  private next = 0;
  private writing: Promise<void> | null = null;
  private failed = false;

  constructor(private readonly params: { store: JournalStore; runId: string; entrySeq: number; attempt: number; logger: Logger }) {
    this.push({ kind: 'start', text: '', toolCallId: null, toolName: null });
  }

  text(text: string): void {
    if (text) this.push({ kind: 'text', text, toolCallId: null, toolName: null });
  }

  toolInput(toolCallId: string, toolName: string, text: string): void {
    this.push({ kind: 'tool_input', text, toolCallId, toolName });
  }

  /** Resolves when every delta pushed so far was written (or dropped after a failed write); never rejects. */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  private push(delta: Omit<NewModelDelta, 'index'>): void {
    if (this.failed) return;
    this.queue.push({ ...delta, index: this.next++ });
    this.writing ??= this.drain();
  }

  private async drain(): Promise<void> {
    const { store, runId, entrySeq, attempt, logger } = this.params;
    try {
      while (this.queue.length > 0) {
        const deltas = this.queue.splice(0, DELTA_BATCH_MAX);
        await store.modelDeltaAppend({ runId, entrySeq, attempt, deltas });
      }
    } catch (err) {
      // A client sees the gap in the attempt's indexes; the journaled result still holds all of it.
      this.failed = true;
      this.queue.length = 0;
      logger.warn({ runId, entrySeq, attempt, err }, 'writing model call deltas failed; the rest of this attempt publishes none');
    } finally {
      this.writing = null;
    }
  }
}

/** The sink of a call that publishes nothing (a one-phase call, a preview). */
export const NO_DELTAS: ModelDeltaSink & { flush(): Promise<void> } = { text: () => {}, toolInput: () => {}, flush: async () => {} };
