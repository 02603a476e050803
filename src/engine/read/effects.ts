// read/: a run's effects as readers outside the engine see them (provenance in agent/).
// Read-only: must not expose the replay core's own types to its readers.
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Json } from '../../journal/run.js';
import { contentKey } from '../replay/content-key.js';
import { attemptOutcome, JournalIndex, latestAttempt } from '../replay/replay.js';
import { resolutionPayload, type ResolutionSource } from '../runtime/suspension.js';

/*
 * A run's effects as readers outside the engine see them (provenance, in agent/): the journal
 * grouped by scope, each effect's latest attempt with how it ended and, for a suspension, the
 * decision that closed it. A stable, read-only view of what replay indexes (replay.ts), so a
 * reader never depends on the replay core's own types.
 */

export interface EffectView {
  kind: string;
  name: string;
  /** What the call asked for, hashed (effectContentKey): equal calls have equal keys. */
  contentKey: string;
  /** The latest attempt's first entry: its `running` intent, its `suspended` request, or a one-write outcome. */
  head: JournalEntry;
  /** The entry that says how the latest attempt ended (its `ok`/`error`/`cancelled`, or the head of a one-write effect); null while in flight or parked. */
  outcome: JournalEntry | null;
  /** A suspension's first `resolved` entry, decoded; null while it is open, and for any other effect. */
  resolution: { seq: number; source: ResolutionSource; value: Json | undefined; by: string | undefined } | null;
}

/** Scope -> its effects in journal order (by first entry). */
export type RunEffects = ReadonlyMap<string, readonly EffectView[]>;

/** The effects of one run's journal (entries in seq order, as journalList returns them). */
export function runEffects(runId: string, entries: readonly JournalEntry[]): RunEffects {
  const index = JournalIndex.build(runId, entries);
  const scopes = new Map<string, EffectView[]>();
  for (const [scope, records] of index.scopes) {
    scopes.set(scope, records.map((record) => {
      const attempt = latestAttempt(record);
      const resolved = attempt.resolutions.find((e) => e.status === 'resolved');
      const decoded = resolved ? resolutionPayload(resolved) : null;
      return {
        kind: record.kind,
        name: record.name,
        contentKey: record.identity.contentKey,
        head: attempt.head,
        outcome: attemptOutcome(attempt),
        resolution: resolved && decoded ? { seq: resolved.seq, source: decoded.source, value: decoded.value, by: decoded.by } : null,
      };
    }));
  }
  return scopes;
}

/** The content key a call of `kind` `name` with `args` has (EffectView.contentKey), to find its effect. */
export function effectContentKey(call: { kind: string; name: string; args: Json }): string {
  return contentKey(call);
}
