// replay/: the fork plan (ForkRun, docs/forks.md): which of a source run's entries a fork starts with, and what it adds.
// Pure: no store, no clock, no I/O; the use case creates the fork with what this returns.
import { newEntry, type ForkPayload, type JournalEntry, type NewJournalEntry } from '../../journal/journal-entry.js';
import type { Json } from '../../journal/run.js';
import { InvalidForkError } from '../errors.js';
import { isEffectHead, isRemoteCall, JournalIndex, latestAttempt } from './replay.js';
import { validatePinned } from './payload-schema.js';

/*
 * A fork at seq S keeps the source's entries 0..S'-1 verbatim, at the same seqs (so every refSeq
 * still points where it did), where S' is S moved back to the first entry of the effect S belongs
 * to: a fork never starts in the middle of an effect. It drops everything from S' on. Among the
 * kept entries, an effect whose outcome was recorded at or after S' (an intent in flight at the
 * fork point, a child run's or a remote task's wait) gets a `cancelled` entry, so the fork runs it
 * again as its own effect, under its own idempotency key, and never waits on the source's child or
 * worker. A decision for an approval at the fork point keeps that approval and appends the
 * decision as its resolution. Trailing status changes are not kept (the fork records its own).
 * After the kept entries comes a `status` entry named `fork` (ForkPayload): where the fork came
 * from, and the kept errors the source handled, which the fork re-throws as the source did.
 */

export interface ForkDecision {
  approve: boolean;
  by: string;
  comment?: string | null;
}

export interface ForkPlan {
  /** S': the seq the fork point moved to (the first entry of the effect S belongs to). */
  forkSeq: number;
  /** What the fork starts with: the kept entries (seq 0..kept-1), the `fork` entry, then the added ones. */
  journal: NewJournalEntry[];
  /** How many of `journal` are the source's entries, copied. */
  kept: number;
  /** Seqs of kept effects the fork runs again (in flight at the fork point, or waits on the source's child or worker). */
  rerun: number[];
  /** Source entries the fork does not keep: seq >= forkSeq (trailing status changes included). */
  dropped: number;
}

export function forkPlan(params: { sourceRunId: string; entries: readonly JournalEntry[]; at: number; decision?: ForkDecision | null }): ForkPlan {
  const { entries, at } = params;
  if (!Number.isInteger(at) || at < 0 || at >= entries.length) {
    throw new InvalidForkError(params.sourceRunId, 'at_seq', `at_seq must be the seq of an entry of the run, 0 to ${entries.length - 1}`);
  }
  const index = JournalIndex.build(params.sourceRunId, entries); // a corrupt source journal is refused before anything is planned
  const named = entries[at]!;
  let forkSeq = at;
  if (named.kind !== 'status' && !isEffectHead(named) && named.refSeq !== null) forkSeq = named.refSeq;
  const decision = params.decision ?? null;
  const approval = entries[forkSeq]!;
  if (decision && !(approval.kind === 'approval' && approval.status === 'suspended')) {
    throw new InvalidForkError(params.sourceRunId, 'decision', `a decision needs an approval at the fork point; seq ${forkSeq} is a ${approval.status} ${approval.kind} entry`);
  }
  let kept = decision ? forkSeq + 1 : forkSeq;
  // Status changes at the end of the prefix are the source's, not the fork's: the fork writes its own.
  while (kept > 0 && entries[kept - 1]!.kind === 'status') kept--;
  const prefix = entries.slice(0, kept);
  const closedBefore = new Set<number>();
  for (const e of prefix) {
    if (e.refSeq !== null && (e.status === 'ok' || e.status === 'error' || e.status === 'cancelled' || e.status === 'resolved')) closedBefore.add(e.refSeq);
  }
  const rerun: number[] = [];
  const added: NewJournalEntry[] = [];
  for (const e of prefix) {
    if (closedBefore.has(e.seq) || !isEffectHead(e) || (decision && e.seq === forkSeq)) continue;
    const inFlight = e.status === 'running';
    const foreignWait = e.status === 'suspended' && (e.kind === 'child' || isRemoteCall(e));
    if (!inFlight && !foreignWait) continue;
    rerun.push(e.seq);
    added.push(newEntry({
      kind: e.kind, name: e.name, status: 'cancelled', scope: e.scope, contentKey: e.contentKey, occurrence: e.occurrence,
      idempotencyKey: e.idempotencyKey, refSeq: e.seq, attempt: e.attempt, payload: { reason: 'forked', seq: forkSeq },
    }));
  }
  if (decision) added.push(decisionEntry(params.sourceRunId, approval, decision, forkSeq));
  const marker: ForkPayload = { fork: { from: params.sourceRunId, seq: forkSeq, continued: handledErrors(index, prefix) } };
  const forkEntry = newEntry({ kind: 'status', name: 'fork', status: 'info', payload: marker as unknown as Json });
  return { forkSeq, journal: [...prefix.map(copyOf), forkEntry, ...added], kept, rerun, dropped: entries.length - kept };
}

/**
 * The errors among the kept entries that the source handled and went on from (its whole journal
 * says so: replay re-threw them there). Without this a kept error with nothing after it would look
 * like one the run died on, and the fork would run the failed effect again.
 */
function handledErrors(index: JournalIndex, prefix: readonly JournalEntry[]): number[] {
  const out: number[] = [];
  for (const e of prefix) {
    if (e.status !== 'error' || e.kind === 'status') continue;
    const attempt = index.attemptAt(e.refSeq ?? e.seq);
    if (!attempt) continue;
    const record = index.record({ scope: attempt.head.scope, contentKey: attempt.head.contentKey, occurrence: attempt.head.occurrence });
    if (record && latestAttempt(record) === attempt && index.continuedAfter(record, e.seq)) out.push(e.seq);
  }
  return out;
}

function copyOf(e: JournalEntry): NewJournalEntry {
  return {
    scope: e.scope, kind: e.kind, name: e.name, contentKey: e.contentKey, occurrence: e.occurrence, status: e.status, payload: e.payload,
    error: e.error, refSeq: e.refSeq, idempotencyKey: e.idempotencyKey, dedupeKey: e.dedupeKey, usage: e.usage, costUsd: e.costUsd, attempt: e.attempt,
  };
}

/** The decision given with the fork, as DecideApproval would journal it, checked against the approval's pinned schema. */
function decisionEntry(sourceRunId: string, approval: JournalEntry, decision: ForkDecision, forkSeq: number): NewJournalEntry {
  const value: Json = { approved: decision.approve, ...(decision.comment ? { comment: decision.comment } : {}) };
  const p = approval.payload as { schema?: Json; schemaHash?: string } | null;
  const violations = validatePinned({ schema: p?.schema ?? {}, schemaHash: p?.schemaHash ?? '' }, value);
  if (violations.length > 0) throw new InvalidForkError(sourceRunId, 'decision', `the approval's schema refuses the decision: ${violations.map((v) => `${v.field} ${v.description}`).join('; ')}`);
  return newEntry({
    kind: 'approval', name: approval.name, status: 'resolved', scope: approval.scope, contentKey: approval.contentKey,
    occurrence: approval.occurrence, refSeq: approval.seq, dedupeKey: `approval:fork:${forkSeq}`,
    payload: { source: 'human', value, by: decision.by, forkedFrom: sourceRunId },
  });
}
