// runtime/: what an execution under a lease reports (ExecuteResult), its events, and how it may start.
// Must not execute anything: run-driver.ts does; the scheduler, the use cases and metrics read these.
import type { Logger } from 'pino';
import { LeaseLostError } from '../../journal/errors.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { Lease, Run } from '../../journal/run.js';
import type { RunLeaseAcquireRunningResult } from '../../store/store.js';
import { ExecutionAbortedError } from '../errors.js';
import type { Waiting } from './suspension.js';

export type ExecuteOutcome = 'succeeded' | 'failed' | 'suspended' | 'pending' | 'lease_lost' | 'aborted';

export interface ExecuteResult {
  runId: string;
  /**
   * `pending`: a resolution arrived while parking, so the run is claimable again. `aborted`: a store
   * failure stopped it (the lease expires and the sweeper recovers it), or executionsAbort did.
   */
  outcome: ExecuteOutcome;
  /** The run after this execution; null when it was stopped before it could write. */
  run: Run | null;
  waitingOn: Waiting[];
  error: unknown;
  /** `pending` because this replica gave the run back for one that serves its definition: not taken again here. */
  handedBack?: true;
  /** The run continued as new (ctx.continueAsNew): its successor's id, PENDING for any executor. */
  continuedAs?: string;
}

/** What `events` emits; the server turns them into metrics, tests await them. */
export interface ExecutionEvents {
  /** Each time an execution starts under a lease (first round and re-takes); an executor tracks it to release on shutdown. */
  'lease-acquired': [{ runId: string; lease: Lease }];
  'lease-renewed': [{ runId: string; lease: Lease }];
  'execution-ended': [ExecuteResult];
  /** A run parked here (SUSPENDED) on these open waits; the ones with a deadline are timers this replica may hold. */
  parked: [{ runId: string; namespace: string; waits: JournalEntry[] }];
}

/**
 * How an execution under a lease starts (RunDriver.executeOnce): a lease alone (the RUNNING entry is
 * written there), a run created here with its lease and RUNNING entry (runCreate with
 * recordRunning: the journal is that entry), or a lease taken with its RUNNING entry
 * (runLeaseAcquireRunning: the run row after it, and that entry).
 */
export type LeasedStart = { lease: Lease; created?: Run } | RunLeaseAcquireRunningResult;

/**
 * The result of an execution stopped before it could write its end: its lease was lost (someone
 * else holds the run now), it was aborted (shutdown, executionsAbort), or a store failure stopped
 * it (the lease expires and the sweeper recovers the run).
 */
export function executionStopped(runId: string, error: unknown, logger: Logger): ExecuteResult {
  const outcome: ExecuteOutcome = error instanceof LeaseLostError ? 'lease_lost' : 'aborted';
  if (error instanceof ExecutionAbortedError) logger.info({ runId, why: error.why }, 'execution stopped on this worker');
  else if (outcome === 'aborted') logger.error({ runId, err: error }, 'execution aborted by a store failure; the lease will expire and the sweeper recovers the run');
  return { runId, outcome, run: null, waitingOn: [], error };
}
