// runtime/: the figures of one execution's replay (journal answers, misses, reruns, invalid resolutions)
// and, in preview mode (ResumeRun's dry run), one item per call and the call that would go live.
// Must not touch the store or change what the execution does: it only counts what it is told.
import { JournalMissError } from '../errors.js';
import type { JournalIndex } from '../replay/replay.js';
import type { Call } from './call.js';
import { resolutionIsValid } from './suspension.js';

export interface PreviewCounts {
  hits: number;
  misses: number;
  reruns: number;
  invalidResolutions: number;
  /** The call that ended a preview, when one did. */
  liveCall: { scope: string; kind: string; name: string; occurrence: number; why: string } | null;
  /** One item per call or entry counted, in replay order (preview mode only). */
  items: PreviewItem[];
}

/** One call or entry of a preview: what ResumeRun's dry run lists. */
export interface PreviewItem {
  outcome: 'HIT' | 'MISS' | 'SKIPPED' | 'RERUN' | 'ORPHANED' | 'INVALID_RESOLUTION';
  /** The journal entry involved; null for a miss. */
  seq: number | null;
  scope: string;
  kind: string;
  name: string;
  detail: string;
}

export class PreviewTally {
  readonly counts: PreviewCounts = { hits: 0, misses: 0, reruns: 0, invalidResolutions: 0, liveCall: null, items: [] };

  constructor(
    private readonly index: JournalIndex,
    /** Preview mode: list items, not only count. */
    private readonly listItems: boolean,
  ) {}

  /** Counts a journal answer, and in preview lists it with the resolutions skipped as invalid. */
  hit(call: Call, invalidResolutions: number): void {
    this.counts.hits++;
    this.counts.invalidResolutions += invalidResolutions;
    if (!this.listItems) return;
    const d = call.decision;
    const at = (seq: number | null, outcome: PreviewItem['outcome'], detail = ''): PreviewItem =>
      ({ outcome, seq, scope: call.identity.scope, kind: call.kind, name: call.name, detail });
    const seq = 'entry' in d ? d.entry.seq : 'suspension' in d ? d.suspension.seq : null;
    this.counts.items.push(at(seq, 'HIT', d.action === 'park' ? 'waits again' : d.action === 'resolved' ? `resolved at seq ${d.resolution.seq}` : ''));
    if (invalidResolutions > 0 && 'suspension' in d) {
      // replayDecide skipped these before it found the winner (or found none): list them.
      const resolutions = this.index.attemptAt(d.suspension.seq)?.resolutions ?? [];
      for (const r of resolutions) {
        if (resolutionIsValid(d.suspension, r)) break;
        this.counts.items.push(at(r.seq, 'INVALID_RESOLUTION', 'fails the schema pinned in its suspension'));
      }
    }
  }

  /** Records the call that ends a preview (a miss, a rerun or a redispatch); returns the error the preview stops with. */
  liveCall(call: Call): JournalMissError {
    const why = call.decision.action === 'live' ? 'miss' : call.decision.action === 'redispatch' ? 'redispatch' : `rerun after ${(call.decision as { because: string }).because}`;
    if (call.decision.action === 'live') this.counts.misses++;
    else this.counts.reruns++;
    this.counts.liveCall = { ...call.identity, kind: call.kind, name: call.name, why };
    const d = call.decision;
    this.counts.items.push({
      outcome: d.action === 'live' ? 'MISS' : 'RERUN', seq: 'entry' in d ? d.entry.seq : 'head' in d ? d.head.seq : null,
      scope: call.identity.scope, kind: call.kind, name: call.name, detail: why,
    });
    return new JournalMissError(call.identity.scope, call.kind, call.name, call.identity.occurrence, why);
  }
}
