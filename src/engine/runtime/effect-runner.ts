// runtime/: the two protocols of a journaled call: perform (intent, execute, outcome) and suspend (wait).
// Acts on the verdict replayDecide gave the call: must not decide replay itself nor write except via Execution.append.
import { LeaseLostError, PayloadTooLargeError, UnstorableValueError } from '../../journal/errors.js';
import { newEntry, type JournalEntry, type NewJournalEntry } from '../../journal/journal-entry.js';
import type { Json } from '../../journal/run.js';
import { crashpoint, unsafeTestKey } from './crashpoint.js';
import { errorFromRecord, errorRecord } from '../replay/error-codec.js';
import type { Call, Execution } from './execution.js';
import type { SuspensionPayload } from './suspension.js';

/*
 * The two protocols every journaled call follows, over an Execution: a dispatched effect
 * (`perform`: intent, execute, outcome) and a wait (`suspend`: suspended entry, then park or the
 * winning resolution). Each acts on the verdict replayDecide gave the call (Execution.call): a
 * journal that disagrees with the code never reaches these (the call threw NonDeterminismError).
 */

const NEVER = new Promise<never>(() => {});

/**
 * Runs a dispatched effect: the intent first when `twoPhase` (committed before `execute` starts),
 * then the terminal entry. Returns the recorded value; a failure is recorded and re-thrown as the
 * error rebuilt from its record, so the first run and every replay see the same thing.
 */
export async function perform(
  exec: Execution,
  call: Call,
  options: {
    twoPhase: boolean;
    intent?: Json;
    status?: 'ok' | 'info';
    execute: () => Promise<Json>;
    /** Extra columns of the `ok` entry, read once `execute` finished (a model call's usage and cost). */
    columns?: () => Partial<Pick<NewJournalEntry, 'usage' | 'costUsd'>>;
  },
): Promise<Json> {
  const { decision } = call;
  if (exec.over) return NEVER;
  if (decision.action === 'return') {
    exec.hit(call);
    return decision.value;
  }
  if (decision.action === 'throw') {
    exec.hit(call);
    throw errorFromRecord(decision.error, call);
  }
  if (decision.action !== 'live' && decision.action !== 'rerun' && decision.action !== 'redispatch') return misrouted(call);
  if (!exec.goLive(call)) return NEVER;
  let head: JournalEntry | null = decision.action === 'redispatch' ? decision.head : null;
  crashpoint(call.kind, 'before-intent');
  if (!head && options.twoPhase) {
    head = (await exec.append(() => [callEntry(call, { status: 'running', payload: options.intent ?? null })]))[0]!;
  }
  crashpoint(call.kind, 'after-intent');
  call.idempotencyKey = unsafeTestKey(call.idempotencyKey, exec.lease?.epoch); // a no-op outside one negative control
  let outcome: { value: Json } | { error: unknown };
  try {
    outcome = { value: await exec.track(options.execute) };
  } catch (error) {
    outcome = { error };
  }
  if (exec.over) return NEVER;
  crashpoint(call.kind, 'after-execute');
  const refSeq = head ? head.seq : null;
  if ('value' in outcome) {
    const { value } = outcome;
    try {
      await exec.append(() => [callEntry(call, { status: head ? 'ok' : (options.status ?? 'ok'), refSeq, payload: value, ...options.columns?.() })]);
      crashpoint(call.kind, 'after-terminal');
      return value;
    } catch (error) {
      // The result cannot be journaled (too large, or a NUL character): the effect is recorded as failed with why.
      if (!(error instanceof PayloadTooLargeError || error instanceof UnstorableValueError)) throw error;
      outcome = { error };
    }
  }
  const record = errorRecord(outcome.error);
  await exec.append(() => [callEntry(call, { status: 'error', refSeq, error: record })]);
  throw errorFromRecord(record, call);
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
  if (exec.over) return NEVER;
  let suspension: JournalEntry;
  if (decision.action === 'resolved') {
    exec.hit(call, decision.invalidResolutions);
    return decision.resolution;
  } else if (decision.action === 'park') {
    exec.hit(call, decision.invalidResolutions);
    suspension = decision.suspension;
  } else if (decision.action === 'live' || decision.action === 'rerun') {
    if (!exec.goLive(call)) return NEVER;
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
      return NEVER;
    }
    if (settledNow) return settledNow;
  }
  exec.park(suspension);
  return NEVER;
}

/** A verdict of the other protocol: replayDecide checks a call's shape (replay.ts callShape), so this is a bug here, not in the journal. */
function misrouted(call: Call): never {
  throw new Error(`internal: the ${call.decision.action} verdict for ${call.kind} "${call.name}" reached the wrong protocol (callShape and effect-runner disagree)`);
}

/** The journal entry of a call: its identity, plus what this write records. Written out, not spread (the hot path). */
function callEntry(
  call: Call, what: Pick<NewJournalEntry, 'status'> & Partial<Pick<NewJournalEntry, 'payload' | 'error' | 'refSeq' | 'usage' | 'costUsd'>>,
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
  });
}
