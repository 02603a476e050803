// runtime/: closes a suspension from outside the run: approval decisions, deadlines, child outcomes.
// Must not write a resolution that fails the pinned schema, nor execute the run (the caller decides that).
import type { Logger } from 'pino';
import { RunNotFoundError, RunStateError } from '../../journal/errors.js';
import { newEntry, type JournalEntry } from '../../journal/journal-entry.js';
import { isTerminalStatus, type Json, type Run } from '../../journal/run.js';
import type { JournalStore, JournalWait, RunLeaseAcquireRunningResult } from '../../store/store.js';
import { assertJsonStorable } from '../../store/write-checks.js';
import { toJson } from '../replay/content-key.js';
import { ApprovalNotFoundError, InvalidResolutionError } from '../errors.js';
import { validatePinned } from '../replay/payload-schema.js';
import { parseApprovalId, pinnedOf, timeoutResolution, type ResolutionPayload } from './suspension.js';

/*
 * Closing suspensions from outside a run: approval decisions, deadlines and child outcomes
 * (signals, which may be buffered, are in signal-inbox.ts). Each validates against the schema pinned in the suspension *before* writing (an
 * invalid payload journals nothing and the run stays parked), then appends a resolution with
 * store.journalResolve, which decides under the run-row lock who wins: the first resolution is
 * applied, later ones are journaled as no-ops, and a repeated signal_id / request_id is answered
 * with the first delivery's outcome without writing.
 */

export interface ResolveResult {
  /** The run whose wait this resolution was for. */
  runId: string;
  /** This call closed the wait (not a duplicate), so the run can continue: whoever received it may execute it now. */
  runnable: boolean;
  /** Whether this resolution closed the wait (false: it was already closed, or a duplicate of one that did not). */
  applied: boolean;
  /** The same signal_id / request_id was delivered before; nothing was written. */
  duplicate: boolean;
  /** `already_resolved` when another resolution won first. */
  reason: 'already_resolved' | null;
  entry: JournalEntry;
  /** The resolution that closed the wait. */
  winner: JournalEntry;
  /** With `leaseFor`: the run's lease, taken with the resolution (the caller must execute the run or release it). */
  taken?: RunLeaseAcquireRunningResult | null;
}

export interface ApprovalDecideParams {
  namespace: string;
  /** `<run id>:<seq>` as listed by waitingOn / ListApprovals; or give runId and seq. */
  approvalId?: string;
  runId?: string;
  seq?: number;
  approve: boolean;
  by: string;
  /** The API key making the decision, journaled with it; null or absent with authentication off. */
  keyId?: string | null;
  comment?: string | null;
  /** Caller-chosen; the same request id is applied once. */
  requestId: string;
  /** Extra fields of a custom approval schema. */
  payload?: Record<string, Json>;
}

/**
 * DecideApproval: validates the decision against the approval's pinned schema and journals it. With
 * `leaseFor`, a decision that makes the run runnable takes its lease in the same transaction
 * (JournalResolveParams.leaseFor), as a signal does: the caller executes the run at once.
 */
export async function approvalDecide(
  store: JournalStore, params: ApprovalDecideParams, options: { leaseFor?: { holder: string; ttlMs: number } } = {},
): Promise<ResolveResult> {
  const address = params.approvalId !== undefined ? parseApprovalId(params.approvalId) : params.runId !== undefined && params.seq !== undefined ? { runId: params.runId, seq: params.seq } : null;
  const shownId = params.approvalId ?? `${params.runId}:${params.seq}`;
  if (!address) throw new ApprovalNotFoundError(shownId);
  const value = toJson({ ...params.payload, approved: params.approve, ...(params.comment ? { comment: params.comment } : {}) }, 'approval decision');
  const resolution: ResolutionPayload = { source: 'human', value, by: params.by, ...(params.keyId ? { keyId: params.keyId } : {}), requestId: params.requestId };
  // Checked once, on the entry it becomes, against the request field (the payload is what a caller sizes).
  assertJsonStorable('payload', resolution as Json, store.limits.payloadBytes);
  let wait: JournalWait | undefined;
  try {
    // The approval and what refers to it, not the run's journal (issue 22).
    [wait] = await store.journalWaits({ runId: address.runId, namespace: params.namespace, seq: address.seq });
  } catch (err) {
    if (err instanceof RunNotFoundError) throw new ApprovalNotFoundError(shownId);
    throw err;
  }
  if (!wait || wait.entry.status !== 'suspended' || wait.entry.kind !== 'approval') throw new ApprovalNotFoundError(shownId);
  const target = wait.entry;
  const { referrers } = wait;
  // An invalidated approval was replaced by a new one (a new seq): deciding the old one would do nothing.
  const cancelled = referrers.find((e) => e.status === 'cancelled');
  if (cancelled) {
    // CancelRun closed it (engine.ts closeOpenWaits): the run is over, as the store would say.
    const closing = cancelled.payload as { reason?: unknown } | null;
    if (closing?.reason === 'run_cancelled') throw new RunStateError(address.runId, 'CANCELLED', 'not finished');
    throw new ApprovalNotFoundError(shownId);
  }
  const violations = validatePinned(pinnedOf(target), value);
  if (violations.length > 0) throw new InvalidResolutionError(address.runId, address.seq, violations);
  try {
    return await resolve(store, address.runId, params.namespace, target, resolution, `approval:${params.requestId}`, options.leaseFor);
  } catch (err) {
    // A run that ended after its approval was decided takes no resolution; the caller still learns who won.
    const winner = referrers.find((r) => r.status === 'resolved');
    if (err instanceof RunStateError && winner) {
      return { runId: address.runId, runnable: false, applied: false, duplicate: false, reason: 'already_resolved', entry: winner, winner };
    }
    throw err;
  }
}

/**
 * For the sweeper: appends the timeout resolution (the pinned default decision; `{}` for a sleep)
 * of every due deadline, up to `limit`. Suspensions of runs that ended meanwhile are skipped.
 */
export async function suspensionsResolveDue(
  store: JournalStore,
  params: { limit: number; logger: Logger },
): Promise<{ resolved: { runId: string; seq: number; kind: string; applied: boolean }[] }> {
  const due = await store.suspensionListDue({ limit: params.limit });
  const resolved: { runId: string; seq: number; kind: string; applied: boolean }[] = [];
  for (const suspension of due) {
    const applied = await suspensionTimeOut(store, suspension, params.logger);
    if (applied !== null) resolved.push({ runId: suspension.runId, seq: suspension.seq, kind: suspension.kind, applied });
  }
  return { resolved };
}

/**
 * The one write a passed deadline makes, whoever makes it (the sweeper, or the replica holding the
 * timer in memory, scheduling/due-timers.ts): the timeout resolution under the dedupe key
 * `timeout:<seq>`, so two parties firing one timer write it once, and a signal or decision racing
 * it loses or wins under the run-row lock (the store's journalResolve). Returns whether it closed
 * the wait; null when the run had ended (nothing to resolve).
 */
export async function suspensionTimeOut(store: JournalStore, suspension: JournalEntry, logger: Logger): Promise<boolean | null> {
  try {
    const result = await store.journalResolve({
      runId: suspension.runId,
      suspensionSeq: suspension.seq,
      entry: newEntry({ kind: suspension.kind, name: suspension.name, status: 'resolved', payload: timeoutResolution(suspension) as Json, dedupeKey: `timeout:${suspension.seq}` }),
    });
    return result.applied && !result.duplicate;
  } catch (err) {
    if (!(err instanceof RunStateError || err instanceof RunNotFoundError)) throw err;
    logger.debug({ runId: suspension.runId, seq: suspension.seq, err }, 'deadline of an ended run skipped');
    return null;
  }
}

/**
 * Closes the parent's `child` wait with the child's outcome. Called by whoever ends the child (the
 * engine finishing it, a cancel) and by the sweeper for ones missed in a crash; the dedupe key
 * makes repeats harmless. Returns null when there is no parent or the parent has ended.
 */
export async function childResolveParent(store: JournalStore, child: Run, logger: Logger): Promise<ResolveResult | null> {
  if (child.parentRunId === null || child.parentSeq === null || !isTerminalStatus(child.status)) return null;
  const value: Json = { runId: child.id, status: child.status, output: child.output, error: (child.error ?? null) as Json };
  try {
    const result = await store.journalResolve({
      runId: child.parentRunId,
      suspensionSeq: child.parentSeq,
      entry: newEntry({ kind: 'child', name: child.workflowName, status: 'resolved', payload: { source: 'child', value }, dedupeKey: `child:${child.id}` }),
    });
    return { ...result, runId: child.parentRunId, runnable: result.applied && !result.duplicate, reason: result.applied ? null : 'already_resolved' };
  } catch (err) {
    if (!(err instanceof RunStateError || err instanceof RunNotFoundError)) throw err;
    logger.debug({ runId: child.id, parentRunId: child.parentRunId, err }, 'parent run ended before its child; nothing to resolve');
    return null;
  }
}

async function resolve(
  store: JournalStore, runId: string, namespace: string, target: JournalEntry, payload: ResolutionPayload, dedupeKey: string,
  leaseFor?: { holder: string; ttlMs: number },
): Promise<ResolveResult> {
  const result = await store.journalResolve({
    runId,
    namespace,
    suspensionSeq: target.seq,
    entry: newEntry({ kind: target.kind, name: target.name, status: 'resolved', payload: payload as Json, dedupeKey }),
    ...(leaseFor ? { leaseFor } : {}),
  });
  return { ...result, runId, runnable: result.applied && !result.duplicate, reason: result.applied ? null : 'already_resolved' };
}
