// runtime/: ends runs from outside their execution: CancelRun, a run timeout (the sweeper's duty, or the
// executing replica at the deadline), and the cancellation of a run's unfinished children that follows.
// Must not execute a run: a holder executing one is fenced by the forced status (its next write or renewal fails).
import type { Logger } from 'pino';
import { RunNotFoundError } from '../../journal/errors.js';
import type { Lease, Run, RunError, RunStatus } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { RunTimedOutError } from '../errors.js';
import { newEntry } from '../../journal/journal-entry.js';
import { childResolveParent } from './resolutions.js';
import { openWaits } from './suspension.js';

/** Who ends runs here: the lease holder recorded while open waits are closed, and where to log. */
export interface RunEnder {
  store: JournalStore;
  holder: string;
  leaseTtlMs: number;
  logger: Logger;
  /**
   * Journal the end of open waits first (closeOpenWaits). The sweeper does not: every write it makes
   * must be fenced by its leader lease, and taking a run's lease is not, so it only forces statuses.
   */
  closeWaits: boolean;
}

/** How one run ends: its forced status and error, and the reason its open waits' `cancelled` entries carry. */
export interface RunEnding {
  status: Extract<RunStatus, 'FAILED' | 'CANCELLED'>;
  error: RunError;
  /** `payload.reason` of each open wait's `cancelled` entry: `run_cancelled`, `run_timed_out`. */
  waitsReason: string;
  /** `payload.message` of those entries; none when null. */
  message: string | null;
}

/** The error a run that passed its deadline fails with (reason `run_timed_out`); `deadline` is in its details. */
export function runTimedOutRecord(run: Pick<Run, 'id' | 'deadlineAt'>): RunError {
  const deadline = run.deadlineAt ?? new Date(0);
  const error = new RunTimedOutError(run.id, deadline);
  return { name: 'RunTimedOutError', message: error.message, reason: 'run_timed_out', details: { deadline: deadline.toISOString() } };
}

/** The error the unfinished children of a timed-out run are cancelled with. */
export const PARENT_TIMED_OUT: RunError = { name: 'RunCancelledError', reason: 'cancelled', message: 'its parent run timed out' };

/**
 * Ends one run that is not terminal: journals a `cancelled` entry for each open wait of a run nobody
 * executes (closeOpenWaits, when `closeWaits`), forces the status (which bumps the epoch, fencing any holder, and writes
 * the terminal `status` entry), then closes the parent's `child` wait. Returns the ended run, or null
 * when it had already ended.
 */
export async function runEnd(ender: RunEnder, target: { runId: string; namespace: string }, ending: RunEnding): Promise<Run | null> {
  if (ender.closeWaits) await closeOpenWaits(ender, target.runId, target.namespace, ending);
  const forced = await ender.store.runStatusForce({ runId: target.runId, namespace: target.namespace, status: ending.status, error: ending.error });
  if (!forced) return null;
  await childResolveParent(ender.store, forced.run, ender.logger);
  return forced.run;
}

/** Cancels every unfinished descendant of `runId` (children first found, then theirs), with `ending`. Returns the ids it ended. */
export async function runChildrenCancel(ender: RunEnder, parent: { runId: string; namespace: string }, ending: RunEnding): Promise<string[]> {
  const cancelled: string[] = [];
  let cursor: string | null = null;
  do {
    const page = await ender.store.runList({
      namespace: parent.namespace, parentRunId: parent.runId, statuses: ['PENDING', 'RUNNING', 'SUSPENDED'], pageSize: 100, cursor,
    });
    for (const child of page.runs) {
      if (await runEnd(ender, { runId: child.id, namespace: parent.namespace }, ending)) cancelled.push(child.id);
      cancelled.push(...(await runChildrenCancel(ender, { runId: child.id, namespace: parent.namespace }, ending)));
    }
    cursor = page.nextCursor;
  } while (cursor);
  return cancelled;
}

/**
 * The run timeout (docs/workflows.md "Timeouts"): fails `run` with RunTimedOutError, then cancels its
 * unfinished children (PARENT_TIMED_OUT). The parent goes first: should this stop half-way, a child
 * left behind is an orphan of a timed-out parent, which the sweeper cancels the same way.
 */
export async function runTimeOut(ender: RunEnder, run: Run): Promise<{ timedOut: Run | null; cancelled: string[] }> {
  const target = { runId: run.id, namespace: run.namespace };
  const timedOut = await runEnd(ender, target, {
    status: 'FAILED', error: runTimedOutRecord(run), waitsReason: 'run_timed_out', message: 'the run timed out',
  });
  const cancelled = await runChildrenCancel(ender, target, PARENT_TIMED_OUT_ENDING);
  return { timedOut, cancelled };
}

/** How the unfinished children of a timed-out run end. */
export const PARENT_TIMED_OUT_ENDING: RunEnding = { status: 'CANCELLED', error: PARENT_TIMED_OUT, waitsReason: 'run_cancelled', message: PARENT_TIMED_OUT.message };

/**
 * Before a forced end: takes the lease of a PENDING or SUSPENDED run and appends one `cancelled`
 * entry per open suspension (the journal must say the wait ended; a terminal run takes no more
 * writes, so this comes first). The forced status that follows releases the lease. A run another
 * worker executes right now is not taken: it is fenced by the forced status, and its waits stay as
 * they are. Best effort: a failure here is logged and the end goes on.
 */
async function closeOpenWaits(ender: RunEnder, runId: string, namespace: string, ending: RunEnding): Promise<void> {
  const { store, logger } = ender;
  let lease: Lease | null;
  try {
    lease = await store.runLeaseAcquire({ runId, namespace, holder: ender.holder, ttlMs: ender.leaseTtlMs, statuses: ['PENDING', 'SUSPENDED'] });
  } catch (err) {
    if (err instanceof RunNotFoundError) throw err;
    logger.warn({ runId, err }, 'could not take the run to close its open waits; ending it anyway');
    return;
  }
  if (!lease) return;
  try {
    // The run's waits and what refers to them (journalWaits), not its journal (issue 22).
    const open = openWaits(await store.journalWaits({ runId, namespace }));
    if (open.length === 0) return;
    const payload = (seq: number) => ({ reason: ending.waitsReason, seq, ...(ending.message ? { message: ending.message } : {}) });
    const closing = open.map((head) => newEntry({
      kind: head.kind, name: head.name, status: 'cancelled', scope: head.scope, contentKey: head.contentKey, occurrence: head.occurrence,
      idempotencyKey: head.idempotencyKey, refSeq: head.seq, payload: payload(head.seq),
    }));
    await store.journalAppend({ lease, entries: closing });
  } catch (err) {
    logger.warn({ runId, err }, 'could not journal the end of open waits; ending the run anyway');
  }
}
