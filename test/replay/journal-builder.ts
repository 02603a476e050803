import { contentKey, idempotencyKey } from '../../src/engine/replay/content-key.js';
import type { EntryKind, EntryStatus, JournalEntry } from '../../src/journal/journal-entry.js';
import type { Json, RunError } from '../../src/journal/run.js';

export const RUN = '00000000-0000-7000-8000-000000000001';

/** Builds journals by hand for the pure replay tests: dense seqs, real content keys. */
export class JournalBuilder {
  readonly entries: JournalEntry[] = [];

  /** Appends a head (an effect's first entry); returns its seq. */
  head(kind: EntryKind, name: string, status: EntryStatus, o: { scope?: string; args?: Json; occurrence?: number; payload?: Json; error?: RunError } = {}): number {
    const scope = o.scope ?? '';
    const key = contentKey({ kind, name, args: o.args ?? null });
    const occurrence = o.occurrence ?? 0;
    return this.push({
      kind, name, status, scope, contentKey: key, occurrence,
      idempotencyKey: idempotencyKey({ runId: RUN, scope, contentKey: key, occurrence }),
      payload: o.payload ?? null, error: o.error ?? null, refSeq: null,
    });
  }

  /** Appends an entry pointing at `refSeq` (terminal, resolution, cancellation). */
  ref(refSeq: number, status: EntryStatus, o: { payload?: Json; error?: RunError } = {}): number {
    const head = this.entries[refSeq]!;
    return this.push({
      kind: head.kind, name: head.name, status, scope: head.scope, contentKey: head.contentKey, occurrence: head.occurrence,
      idempotencyKey: head.idempotencyKey, payload: o.payload ?? null, error: o.error ?? null, refSeq,
    });
  }

  status(name: string): number {
    return this.push({ kind: 'status', name, status: 'info', scope: '', contentKey: '', occurrence: 0, idempotencyKey: null, payload: { status: name }, error: null, refSeq: null });
  }

  private push(e: Omit<JournalEntry, 'runId' | 'seq' | 'createdAt' | 'dedupeKey' | 'usage' | 'costUsd' | 'attempt'>): number {
    const seq = this.entries.length;
    this.entries.push({ ...e, runId: RUN, seq, dedupeKey: null, usage: null, costUsd: null, attempt: null, createdAt: new Date(0) });
    return seq;
  }
}

export function identityOf(kind: EntryKind, name: string, o: { scope?: string; args?: Json; occurrence?: number } = {}) {
  return { scope: o.scope ?? '', contentKey: contentKey({ kind, name, args: o.args ?? null }), occurrence: o.occurrence ?? 0 };
}
