// read/: StartRun's wait: until the run reaches what the caller waits for (its first park, outside input, its end).
// Read-only: must not write nor execute a run; it follows the run's journal wherever the run executes.
import { isTerminalStatus, type Run } from '../../journal/run.js';
import { journalFollow } from '../../store/journal-follow.js';
import type { JournalStore } from '../../store/store.js';
import type { RemoteCalls } from '../runtime/remote-calls.js';
import type { Waiting } from '../runtime/suspension.js';
import { statusOf } from './run-events.js';
import { runWaits } from './run-waits.js';
import type { McpConnector } from '../runtime/mcp-connector.js';

/*
 * What a StartRun waits for (docs/api.md "Waiting for a run"), as a Temporal user's
 * `client.workflow.execute` waits for the result: a timer, a retry's backoff, a remote tool's call
 * and a child run are the run's own business, so the wait goes through them; only an approval or
 * a signal needs somebody outside, and a caller asking for that point gets the answer there.
 * `first_park` keeps StartRun's original `wait` (the first park of any kind).
 *
 * After a park the run may continue on any replica, so the wait follows the run's journal
 * (journalFollow: the store's wake-ups, the same path StreamRunEvents takes) and looks again at
 * each status entry. It never polls on its own: journalFollow's fallback poll covers lost wake-ups.
 */

export type WaitFor = 'first_park' | 'outside_input' | 'end';

/** The kinds of wait only the outside world closes: somebody decides an approval or sends a signal. */
const OUTSIDE_INPUT_KINDS: ReadonlySet<string> = new Set(['approval', 'signal']);

/** Whether a wait needs somebody outside (an approval, a signal), rather than time, a worker or a child run. */
export function needsOutsideInput(waiting: Pick<Waiting, 'kind'>): boolean {
  return OUTSIDE_INPUT_KINDS.has(waiting.kind);
}

/** Whether `run`, waiting on `waitingOn` (its open waits when SUSPENDED), is where `waitFor` stops waiting. */
export function waitReached(waitFor: WaitFor, run: Pick<Run, 'status'>, waitingOn: readonly Pick<Waiting, 'kind'>[]): boolean {
  if (isTerminalStatus(run.status)) return true;
  if (run.status !== 'SUSPENDED') return false;
  if (waitFor === 'first_park') return true;
  return waitFor === 'outside_input' && waitingOn.some(needsOutsideInput);
}

export interface RunWaitParams {
  store: JournalStore;
  remote: RemoteCalls;
  /** MCP servers' health, for the waiting reason of a call whose server is unreachable. */
  mcp?: McpConnector | null;
  /** The run as last seen; the wait follows its journal from there. */
  run: Run;
  waitFor: WaitFor;
  /** Stops the wait: it then answers the run as it stands, `reached` false. */
  signal: AbortSignal;
  /** journalFollow's fallback poll when no wake-up arrives. */
  pollMs?: number;
}

export interface RunWaitResult {
  run: Run;
  /** What the run waits on, when it is SUSPENDED. */
  waitingOn: Waiting[];
  /** The run reached what the caller waited for (false: the signal stopped the wait first). */
  reached: boolean;
}

/**
 * Waits until the run reaches `waitFor`, following its journal; answers the run as it stands and
 * what it waits on. When the signal aborts first it answers the same, with `reached` false.
 */
export async function runWait(params: RunWaitParams): Promise<RunWaitResult> {
  const { store, run, waitFor, signal } = params;
  const ids = { runId: run.id, namespace: run.namespace };
  const look = async (now: Run): Promise<RunWaitResult> => {
    const waitingOn = now.status === 'SUSPENDED' ? await runWaits(params, ids) : [];
    return { run: now, waitingOn, reached: waitReached(waitFor, now, waitingOn) };
  };
  const first = await look(run);
  if (first.reached || signal.aborted) return first;
  const it = journalFollow({
    store, ...ids, afterSeq: run.nextSeq - 1, signal, ...(params.pollMs ? { pollMs: params.pollMs } : {}),
  })[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await it.next();
      if (next.done) break;
      if (statusOf(next.value) === null) continue;
      // The row, not the entry: a later status may already be written, and the waits are read now.
      const seen = await look(await store.runGet(ids));
      if (seen.reached) return seen;
    }
  } finally {
    void it.return(undefined).catch(() => undefined);
  }
  return look(await store.runGet(ids));
}
