// replay/: the scoped ReplayCursor over a JournalIndex: which recorded effect a call consumes.
// Must not decide what a matched effect means (replay.ts replayDecide does), nor touch a store, the clock or any I/O.
import type { CallIdentity, EffectRecord, JournalIndex } from './replay.js';

/**
 * Scoped forward matching. Each scope has a cursor at its first unconsumed effect; a call consumes
 * the unconsumed effect with its identity (necessarily at or after the cursor) and the cursor moves
 * over the consumed prefix. A miss consumes nothing and moves nothing, so a call inserted into the
 * code costs one live call and the effects around it still replay. Because the cursor only moves
 * over consumed effects, concurrent calls that finish in another order than they were journaled
 * never turn a recorded effect into a miss.
 */
export class ReplayCursor {
  /** Consumed effects by their record's ordinal: one byte each, no set of 100,000 records. */
  private readonly consumed: Uint8Array;
  private readonly cursors = new Map<string, number>();

  constructor(readonly index: JournalIndex) {
    this.consumed = new Uint8Array(index.records.length);
  }

  take(identity: CallIdentity): EffectRecord | undefined {
    const record = this.index.record(identity);
    if (!record || this.consumed[record.ordinal] === 1) return undefined;
    this.consumed[record.ordinal] = 1;
    const list = this.index.scopes.get(identity.scope)!;
    let at = this.cursors.get(identity.scope) ?? 0;
    while (at < list.length && this.consumed[list[at]!.ordinal] === 1) at++;
    this.cursors.set(identity.scope, at);
    return record;
  }

  /** Index (within its scope) of the first effect no call has consumed yet. */
  position(scope: string): number {
    return this.cursors.get(scope) ?? 0;
  }

  /** Effects no call consumed, in journal order: orphans once the body has run to its end. */
  unconsumed(): EffectRecord[] {
    return this.index.records.filter((r) => this.consumed[r.ordinal] === 0); // already in journal order
  }
}
