// replay/: invalidation (ResumeRun's `invalidate`): the `cancelled` entries that unpin effects so replay reruns them.
// Pure: no store, no clock, no I/O; the use case appends what this returns under its lease.
import { newEntry, type JournalEntry, type NewJournalEntry } from '../../journal/journal-entry.js';
import { InvalidateTargetError } from '../errors.js';
import { isEffectHead, latestAttempt, type JournalIndex } from './replay.js';

/**
 * The entries that record `invalidate: [seq…]`: one `cancelled` entry per targeted effect, pointing
 * at the head of its latest attempt, so replay reruns it (docs/journal.md "Invalidation"). A seq may
 * name any entry of the effect (its head, terminal or a resolution). Throws InvalidateTargetError
 * for a seq that is no effect's or names a superseded attempt; effects already unpinned are skipped.
 */
export function invalidationEntries(index: JournalIndex, entries: readonly JournalEntry[], seqs: readonly number[]): NewJournalEntry[] {
  const out: NewJournalEntry[] = [];
  const done = new Set<number>();
  for (const seq of seqs) {
    const entry = Number.isInteger(seq) ? entries[seq] : undefined;
    if (!entry) throw new InvalidateTargetError(index.runId, seq, 'the journal has no entry at that seq');
    if (entry.kind === 'status') throw new InvalidateTargetError(index.runId, seq, 'it is a status change, not an effect');
    const headSeq = isEffectHead(entry) ? entry.seq : entry.refSeq;
    const attempt = headSeq === null ? undefined : index.attemptAt(headSeq);
    if (!attempt) throw new InvalidateTargetError(index.runId, seq, 'it belongs to no effect');
    const { head } = attempt;
    const record = index.record({ scope: head.scope, contentKey: head.contentKey, occurrence: head.occurrence })!;
    const latest = latestAttempt(record);
    if (latest !== attempt) {
      throw new InvalidateTargetError(index.runId, seq, `a later attempt of this effect starts at seq ${latest.head.seq}; invalidate that one`);
    }
    if (done.has(head.seq) || attempt.terminal?.status === 'cancelled') continue;
    done.add(head.seq);
    out.push(newEntry({
      kind: head.kind,
      name: head.name,
      status: 'cancelled',
      scope: head.scope,
      contentKey: head.contentKey,
      occurrence: head.occurrence,
      idempotencyKey: head.idempotencyKey,
      refSeq: head.seq,
      payload: { reason: 'invalidated', seq },
    }));
  }
  return out;
}
