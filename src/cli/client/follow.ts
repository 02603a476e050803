import { RunStatus, runStatusName, type ReconnectInfo, type Run, type RunEvent } from '@waymark-dev/client';
import type { Invocation } from './command-spec.js';
import { formatDuration, millis } from './format.js';
import { runStatusText } from './run-text.js';

/*
 * Following a run's events (`runs start --wait`, `runs events --follow`). The client package's
 * event stream reconnects by itself after the last seq it delivered; this adds what a person
 * watches: on a terminal one line rewritten in place with the run's status, its current step and
 * the time since it started; on a pipe nothing but the lines the command prints per event.
 * Ctrl-C aborts the stream only: the run is not touched.
 */

const SPINNER = '⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏';

export interface FollowParams {
  run: Run;
  /** Events after this seq (-1n: all). */
  afterSeq: bigint;
  /** Keep following while the run is parked, until it ends (else stop when it parks). */
  followSuspended: boolean;
  /** Stop after this seq (a snapshot of history); unset: until the stream ends. Read at each event. */
  untilSeq?: bigint | (() => bigint | undefined) | undefined;
  /** Ends following quietly (not an interruption): `runs start --wait` once its answer is in. */
  stop?: AbortSignal | undefined;
  onEvent?: ((event: RunEvent) => void) | undefined;
}

/** Follows until the stream ends (or Ctrl-C: `interrupted`); returns the last status seen. */
export async function followRun(inv: Invocation, p: FollowParams): Promise<{ status: RunStatus; interrupted: boolean }> {
  const { out } = inv;
  let status = p.run.status;
  let step = '';
  let note = '';
  let frame = 0;
  const started = millis(p.run.createTime) ?? Date.now();
  const render = (): void => {
    if (out.json || !out.terminal) return;
    frame = (frame + 1) % SPINNER.length;
    const parts = [`${out.paint(SPINNER[frame]!, 'cyan')} run ${p.run.id.slice(0, 13)}…`, runStatusText(out, status)];
    if (step) parts.push(step);
    parts.push(formatDuration(Math.max(0, Date.now() - started)));
    if (note) parts.push(out.paint(note, 'yellow'));
    out.progress(parts.join(' · '));
  };
  const onReconnect = (info: ReconnectInfo): void => {
    note = `reconnecting (attempt ${info.attempt}) after seq ${info.afterSeq}`;
    if (!out.terminal && !out.json) out.note(`waymark: the event stream dropped (${info.error.message}); ${note}`);
    render();
  };
  const timer = setInterval(render, 100);
  timer.unref();
  render();
  try {
    const until = (): bigint | undefined => (typeof p.untilSeq === 'function' ? p.untilSeq() : p.untilSeq);
    const last = until();
    if (last !== undefined && p.afterSeq >= last) return { status, interrupted: false };
    const signal = p.stop ? AbortSignal.any([inv.signal, p.stop]) : inv.signal;
    const events = inv.client().events(p.run.id, { afterSeq: p.afterSeq, followSuspended: p.followSuspended, signal, onReconnect });
    for await (const event of events) {
      note = '';
      if (event.body.case === 'statusChanged') status = event.body.value.status;
      else if (event.body.case === 'entry') step = `${event.body.value.kind} ${event.body.value.name}`;
      p.onEvent?.(event);
      render();
      const end = until();
      if (end !== undefined && event.seq >= end) break;
    }
    return { status, interrupted: false };
  } catch (err) {
    if (inv.signal.aborted) return { status, interrupted: true };
    if (p.stop?.aborted) return { status, interrupted: false };
    throw err;
  } finally {
    clearInterval(timer);
    out.clearProgress();
  }
}

/** The line printed when Ctrl-C stops following: the run goes on untouched. */
export function stoppedFollowing(runId: string, status: RunStatus | undefined): string {
  const now = status === undefined || status === RunStatus.UNSPECIFIED ? '' : ` (${runStatusName(status)} when last seen)`;
  return `stopped following; run ${runId} was not changed${now}. Follow it again with: waymark runs events ${runId} --follow`;
}
