// runtime/: Call, one effect reserved by an execution: its identity, key and what the journal decided for it.
// Must not perform anything: effect-runner.ts performs, execution.ts reserves, preview-tally.ts counts.
import type { EntryKind } from '../../journal/journal-entry.js';
import type { CallIdentity, ReplayDecision } from '../replay/replay.js';

/** An effect an execution reserved (Execution.call): where it sits, what it is, and whether the journal answers it. */
export interface Call {
  identity: CallIdentity;
  kind: EntryKind;
  name: string;
  idempotencyKey: string;
  decision: ReplayDecision;
}
