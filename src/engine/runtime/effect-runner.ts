// runtime/: the two protocols of a journaled call: perform (intent, execute, outcome) and suspend (wait).
// Acts on the verdict replayDecide gave the call: must not decide replay itself nor write except via Execution.append.
import { LeaseLostError, PayloadTooLargeError, UnstorableValueError } from '../../journal/errors.js';
import { newEntry, type JournalEntry, type NewJournalEntry } from '../../journal/journal-entry.js';
import type { Json } from '../../journal/run.js';
import { crashpoint, unsafeTestKey } from './crashpoint.js';
import { errorFromRecord, errorRecord } from '../replay/error-codec.js';
import { EffectTimeoutError, RetriesExhaustedError } from '../errors.js';
import { backoffMs, classifyFailure, isRetryTimer, retryTimerPayload, type RetryPolicy } from '../author/retry.js';
import { ANY_JSON_SCHEMA } from '../replay/payload-schema.js';
import type { Call } from './call.js';
import type { Execution } from './execution.js';
import type { EffectEnd, EffectSpan } from './effect-tracer.js';
import { currentToolCallId } from './tool-call-id.js';
import type { SuspensionPayload } from './suspension.js';
import { never } from './never.js';

/*
 * The two protocols every journaled call follows, over an Execution: a dispatched effect
 * (`perform`: intent, execute, outcome) and a wait (`suspend`: suspended entry, then park or the
 * winning resolution). Each acts on the verdict replayDecide gave the call (Execution.call): a
 * journal that disagrees with the code never reaches these (the call threw NonDeterminismError).
 */

const noop = (): void => {};

/** What one dispatched effect needs: how it is journaled, what it runs, and how often it may run. */
export interface PerformOptions {
  twoPhase: boolean;
  intent?: Json;
  status?: 'ok' | 'info';
  /**
   * One attempt. `signal` is the execution's, or the attempt's own when a timeout applies;
   * `headSeq` is the seq of the call's `running` entry (null for a one-phase call); `traceparent`
   * is the attempt's span (effect-tracer.ts), null when tracing is off.
   */
  execute: (signal: AbortSignal, headSeq: number | null, traceparent: string | null) => Promise<Json>;
  /** Extra columns of the `ok` entry, read once `execute` finished (a model call's usage and cost). */
  columns?: () => Partial<Pick<NewJournalEntry, 'usage' | 'costUsd'>>;
  /** Absent: one attempt, the failure recorded as itself (the default of steps). */
  retry?: RetryPolicy;
  /** Start to close of one attempt, in ms; absent or null: none. */
  timeoutMs?: number | null;
  /**
   * A secret tool's payloads: `seal` what is journaled (intent given already sealed, and the
   * result), `open` what a replay returns. Absent: payloads are journaled as they are.
   */
  seal?: { seal(value: Json): Json; open(value: Json): Json };
  /**
   * Called once, before the attempt starts, when its intent is committed or it is known that none
   * will be (budget admission releases its lock here: the reservation is then in the journal).
   */
  afterIntent?: () => void;
}

/**
 * The recorded value of a call replay answers with `return`, for a caller without a seal: what
 * perform would return, without its two async frames (a resume at the journal limit replays up to
 * 100,000 steps, and those frames were half of a sequential step's replay). Null otherwise: perform.
 */
export function replayedReturn(exec: Execution, call: Call): { value: Json } | null {
  if (exec.over || call.decision.action !== 'return') return null;
  exec.hit(call);
  return { value: call.decision.value };
}

/**
 * Runs a dispatched effect: the intent first when `twoPhase` (committed before `execute` starts),
 * then the terminal entry. Returns the recorded value; a failure is recorded and re-thrown as the
 * error rebuilt from its record, so the first run and every replay see the same thing. With a
 * retry policy a retryable failure is journaled together with its backoff timer (one append) and
 * the call parks on the timer; the attempt after it runs when the timer resolved (docs/journal.md
 * "Retries").
 */
export async function perform(exec: Execution, call: Call, options: PerformOptions): Promise<Json> {
  const { afterIntent } = options;
  // Only budget-admitted model calls pass afterIntent: steps and tools keep the direct path.
  if (!afterIntent) return performAttempt(exec, call, options, noop);
  try {
    return await performAttempt(exec, call, options, afterIntent);
  } finally {
    afterIntent();
  }
}

async function performAttempt(exec: Execution, call: Call, options: PerformOptions, afterIntent: () => void): Promise<Json> {
  const { decision } = call;
  if (exec.over) {
    afterIntent();
    return never();
  }
  if (decision.action === 'return') {
    exec.hit(call);
    return options.seal ? options.seal.open(decision.value) : decision.value;
  }
  if (decision.action === 'throw') {
    exec.hit(call);
    throw errorFromRecord(decision.error, call);
  }
  let attempt = 1;
  let head: JournalEntry | null = null;
  if (decision.action === 'park' || decision.action === 'resolved') {
    // The latest head of an effect that is a suspension is its backoff timer (replayDecide lets only those through).
    if (!isRetryTimer(decision.suspension)) {
      afterIntent();
      return misrouted(call);
    }
    if (decision.action === 'park') {
      afterIntent();
      exec.hit(call, decision.invalidResolutions);
      exec.park(decision.suspension);
      return never();
    }
    attempt = decision.suspension.attempt ?? 2;
    // The timer fired: the next attempt is a rerun after an error (what a preview reports).
    call.decision = { action: 'rerun', because: 'error', entry: decision.resolution };
  } else if (decision.action === 'redispatch') {
    head = decision.head;
    attempt = head.attempt ?? 1;
  } else if (decision.action !== 'live' && decision.action !== 'rerun') {
    afterIntent();
    return misrouted(call);
  }
  if (!exec.goLive(call)) {
    afterIntent();
    return never();
  }
  crashpoint(call.kind, 'before-intent');
  const redispatch = head !== null;
  if (!head && options.twoPhase) {
    try {
      head = (await exec.append(() => [callEntry(call, { status: 'running', payload: options.intent ?? null, attempt })]))[0]!;
    } finally {
      afterIntent();
    }
  }
  afterIntent();
  crashpoint(call.kind, 'after-intent');
  call.idempotencyKey = unsafeTestKey(call.idempotencyKey, exec.lease?.epoch); // a no-op outside one negative control
  // A span for this live attempt only: an effect the journal answered returned above (docs/tracing.md).
  const span = exec.tracer ? startSpan(exec, call, attempt, redispatch) : null;
  let outcome: { value: Json } | { error: unknown };
  try {
    const timeoutMs = options.timeoutMs;
    const headSeq = head ? head.seq : null;
    const execute = (signal: AbortSignal): Promise<Json> => options.execute(signal, headSeq, span ? span.traceparent : null);
    const run = timeoutMs ? () => attemptWithin(exec, call, execute, timeoutMs) : () => execute(exec.abort.signal);
    outcome = { value: await exec.track(span ? () => span.within(run) : run) };
  } catch (error) {
    outcome = { error };
  }
  if (exec.over) {
    span?.ended({ outcome: 'abandoned' });
    return never();
  }
  crashpoint(call.kind, 'after-execute');
  const refSeq = head ? head.seq : null;
  if ('value' in outcome) {
    const { value } = outcome;
    try {
      const journaled = options.seal ? options.seal.seal(value) : value;
      const columns = options.columns?.();
      await exec.append(() => [callEntry(call, { status: head ? 'ok' : (options.status ?? 'ok'), refSeq, payload: journaled, attempt, ...columns })]);
      span?.ended({ outcome: 'ok', usage: columns?.usage ?? null });
      crashpoint(call.kind, 'after-terminal');
      return value;
    } catch (error) {
      // The result cannot be journaled (too large, or a NUL character): the effect is recorded as failed with why.
      if (!(error instanceof PayloadTooLargeError || error instanceof UnstorableValueError)) throw error;
      outcome = { error };
    }
  }
  let record = errorRecord(outcome.error);
  const policy = options.retry;
  if (policy && policy.maxAttempts > 1) {
    const failure = classifyFailure(policy, outcome.error);
    if (failure.retryable && attempt < policy.maxAttempts) {
      const delayMs = backoffMs(policy, attempt, failure.retryAfterMs);
      span?.ended({ outcome: 'retrying', error: outcome.error });
      // The failure and its timer in one append: no crash leaves a retryable failure without its wait.
      const written = await exec.append(async () => {
        const deadlineAt = new Date((await exec.now()).getTime() + delayMs);
        return [
          callEntry(call, { status: 'error', refSeq, error: record, attempt }),
          callEntry(call, {
            status: 'suspended', attempt: attempt + 1,
            payload: retryTimerPayload({ kind: call.kind, name: call.name, attempt: attempt + 1, maxAttempts: policy.maxAttempts, delayMs, deadlineAt, ...ANY_JSON_SCHEMA }),
          }),
        ];
      });
      exec.park(written[1]!);
      return never();
    }
    if (failure.retryable) record = errorRecord(new RetriesExhaustedError(call.kind, call.name, attempt, record));
  }
  span?.ended({ outcome: 'error', error: outcome.error });
  await exec.append(() => [callEntry(call, { status: 'error', refSeq, error: record, attempt })]);
  throw errorFromRecord(record, call);
}

/**
 * The tracer's span for a live attempt (null for a kind it does not trace), ended once: by perform
 * with the attempt's outcome, or as `abandoned` when the execution stops first (its lease was lost
 * at the write, a store failure), since perform's promise then never settles.
 */
function startSpan(exec: Execution, call: Call, attempt: number, redispatch: boolean): EffectSpan | null {
  const { run } = exec;
  const span = exec.tracer!.effectStarted({
    runId: run.id, namespace: run.namespace, workflow: run.workflowName, kind: call.kind, name: call.name,
    idempotencyKey: call.idempotencyKey, attempt, redispatch, epoch: exec.lease?.epoch ?? null,
    ...(call.kind === 'tool' ? toolCallIdOf() : {}),
  });
  if (!span) return null;
  let open = true;
  const ended = (end: EffectEnd): void => {
    if (!open) return;
    open = false;
    span.ended(end);
  };
  void exec.whenEnded().then((end) => end.kind === 'stopped' && ended({ outcome: 'abandoned' }));
  return { traceparent: span.traceparent, within: (fn) => span.within(fn), ended };
}

function toolCallIdOf(): { toolCallId?: string } {
  const toolCallId = currentToolCallId();
  return toolCallId ? { toolCallId } : {};
}

/**
 * One attempt bounded by `timeoutMs`: its own AbortSignal (aborted with the execution's too) fires
 * with EffectTimeoutError when the time is up, and the attempt fails then even if `execute` ignores
 * the signal (its late result is dropped).
 */
async function attemptWithin(exec: Execution, call: Call, execute: (signal: AbortSignal) => Promise<Json>, timeoutMs: number): Promise<Json> {
  const controller = new AbortController();
  const parent = exec.abort.signal;
  const forward = (): void => controller.abort(parent.reason);
  if (parent.aborted) forward();
  else parent.addEventListener('abort', forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new EffectTimeoutError(call.kind, call.name, timeoutMs);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  try {
    return await Promise.race([execute(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
    parent.removeEventListener('abort', forward);
  }
}

/**
 * Waits on a suspension: returns the winning resolution from the journal, or journals a new
 * suspended entry (`payload` built when its turn in the queue comes) and parks. `beforePark`
 * may settle the wait at once (a child that already ended) by returning a resolution entry.
 */
export async function suspend(
  exec: Execution,
  call: Call,
  options: {
    payload: () => Promise<SuspensionPayload>;
    beforePark?: (suspension: JournalEntry) => Promise<JournalEntry | null>;
  },
): Promise<JournalEntry> {
  const { decision } = call;
  if (exec.over) return never();
  let suspension: JournalEntry;
  if (decision.action === 'resolved') {
    exec.hit(call, decision.invalidResolutions);
    return decision.resolution;
  } else if (decision.action === 'park') {
    exec.hit(call, decision.invalidResolutions);
    suspension = decision.suspension;
  } else if (decision.action === 'live' || decision.action === 'rerun') {
    if (!exec.goLive(call)) return never();
    suspension = (await exec.append(async () => [
      callEntry(call, { status: 'suspended', payload: (await options.payload()) as unknown as Json }),
    ]))[0]!;
  } else {
    return misrouted(call);
  }
  if (exec.mode === 'live' && options.beforePark) {
    const hook = options.beforePark;
    let settledNow: JournalEntry | null;
    try {
      settledNow = await exec.track(() => hook(suspension));
    } catch (error) {
      exec.stop(error instanceof LeaseLostError ? 'lease_lost' : 'store_error', error);
      return never();
    }
    if (settledNow) return settledNow;
  }
  exec.park(suspension);
  return never();
}

/** A verdict of the other protocol: replayDecide checks a call's shape (replay.ts callShape), so this is a bug here, not in the journal. */
function misrouted(call: Call): never {
  throw new Error(`internal: the ${call.decision.action} verdict for ${call.kind} "${call.name}" reached the wrong protocol (callShape and effect-runner disagree)`);
}

/** The journal entry of a call: its identity, plus what this write records. Written out, not spread (the hot path). */
function callEntry(
  call: Call, what: Pick<NewJournalEntry, 'status'> & Partial<Pick<NewJournalEntry, 'payload' | 'error' | 'refSeq' | 'usage' | 'costUsd' | 'attempt'>>,
): NewJournalEntry {
  return newEntry({
    kind: call.kind,
    name: call.name,
    scope: call.identity.scope,
    contentKey: call.identity.contentKey,
    occurrence: call.identity.occurrence,
    idempotencyKey: call.idempotencyKey,
    status: what.status,
    payload: what.payload,
    error: what.error,
    refSeq: what.refSeq,
    usage: what.usage,
    costUsd: what.costUsd,
    attempt: what.attempt,
  });
}
