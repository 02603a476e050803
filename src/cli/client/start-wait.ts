import { EntryStatus, RunStatus, type Run, type RunEvent, type StartRunResult, type WaitForName, type WaitingOn } from '@waymark-dev/client';
import type { Invocation } from './command-spec.js';
import { UsageError } from './exit-codes.js';
import { followRun } from './follow.js';
import { formatTime } from './format.js';

/*
 * `runs start --wait`: StartRun's wait_for (docs/api.md "Waiting for a run") with progress. The
 * run is started first (its id is what the progress follows); then one call waits with the same
 * idempotency key while the event stream shows what happens, and each park the run goes through
 * by itself (a timer, a retry backoff, a remote tool call, a child run) is one line on stderr
 * saying what it waits on. The server decides when the wait is over; the stream stops at the seq
 * of the run it answered, so a pipe prints every event up to that point and nothing after.
 */

/** `--wait-for` values, as a person types them. */
const WAIT_FOR: Record<string, WaitForName> = { 'first-park': 'FIRST_PARK', 'outside-input': 'OUTSIDE_INPUT', end: 'END' };

/** What `--wait` / `--wait-for` ask for; undefined when the command does not wait. */
export function waitForOf(wait: boolean, waitFor: string | undefined): WaitForName | undefined {
  if (waitFor === undefined) return wait ? 'OUTSIDE_INPUT' : undefined;
  const name = WAIT_FOR[waitFor];
  if (!name) throw new UsageError(`--wait-for must be one of ${Object.keys(WAIT_FOR).join(', ')}; got "${waitFor}"`);
  return name;
}

/** One wait as a progress line says it: the server's detail when it has one (a backoff, a missing worker). */
export function waitText(w: WaitingOn): string {
  const deadline = w.deadline ? `, due ${formatTime(w.deadline)}` : '';
  return w.detail ? w.detail : `${w.kind} "${w.name}"${deadline}`;
}

export interface StartWaitParams {
  run: Run;
  waitFor: WaitForName;
  /** The waiting StartRun (same workflow, input and idempotency key as the start). */
  wait: (signal: AbortSignal) => Promise<StartRunResult>;
  onEvent?: ((event: RunEvent) => void) | undefined;
}

/** Waits as StartRun's wait_for says, showing progress; no answer on Ctrl-C (the run is untouched), with the last status seen. */
export async function startWait(inv: Invocation, p: StartWaitParams): Promise<{ answer: StartRunResult | null; status: RunStatus }> {
  const stop = new AbortController();
  let target: bigint | undefined;
  let seen = -1n;
  const answer = p.wait(AbortSignal.any([inv.signal, stop.signal])).then((r) => {
    target = r.run.nextSeq - 1n;
    if (seen >= target) stop.abort();
    return r;
  }, (err: unknown) => {
    stop.abort();
    throw err;
  });
  // The waits the stream showed since the last status change: what a park is described by when
  // the run has moved on before GetRun answers (a short backoff fired on time).
  let opened: string[] = [];
  /** The notes being written: awaited before the command prints its answer, so they come first. */
  const notes: Promise<void>[] = [];
  const parked = (seq: bigint, seen: string[]): void => {
    if (p.waitFor === 'FIRST_PARK') return;
    // What the run waits on now, unless the wait is over here (the command prints it next).
    notes.push(inv.client().getRun(p.run.id, { signal: inv.signal, timeoutMs: inv.timeoutMs }).then(({ run, waitingOn }) => {
      if (target !== undefined && seq >= target) return;
      const still = run.status === RunStatus.SUSPENDED && waitingOn.length > 0;
      const outside = still && waitingOn.some((w) => w.kind === 'approval' || w.kind === 'signal');
      if (outside && p.waitFor === 'OUTSIDE_INPUT') return;
      const what = still ? waitingOn.map(waitText).join('; ') : seen.join('; ');
      if (!what) return;
      inv.out.note(`waymark: run ${p.run.id} parked at seq ${seq}, waiting on ${what}; ${outside ? 'waiting for the run to end' : 'it continues by itself'}`);
    }, () => undefined));
  };
  try {
    const followed = await followRun(inv, {
      run: p.run, afterSeq: -1n, followSuspended: true, stop: stop.signal, untilSeq: () => target,
      onEvent: (event) => {
        seen = event.seq;
        p.onEvent?.(event);
        const { body } = event;
        if (body.case === 'entry' && body.value.status === EntryStatus.SUSPENDED) opened.push(`${body.value.kind} "${body.value.name}"`);
        if (body.case !== 'statusChanged') return;
        if (body.value.status === RunStatus.SUSPENDED) parked(event.seq, opened);
        opened = [];
      },
    });
    if (followed.interrupted) {
      stop.abort();
      await answer.catch(() => undefined);
      return { answer: null, status: followed.status };
    }
    return { answer: await answer, status: followed.status };
  } finally {
    stop.abort();
    await answer.catch(() => undefined);
    await Promise.all(notes);
  }
}
