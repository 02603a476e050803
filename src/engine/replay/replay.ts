// replay/: the pure replay core: JournalIndex and replayDecide (every verdict a value); the scoped cursor is replay-cursor.ts.
// Must not import runtime/, scheduling/ or the use cases, nor touch a store, the clock or any I/O.
import type { EntryKind, JournalEntry } from '../../journal/journal-entry.js';
import type { Json, RunError } from '../../journal/run.js';
import { JournalCorruptError } from '../errors.js';

/*
 * Replay, as pure functions over journal entries: no store, no clock, no I/O (STYLE habit 6).
 *
 * - JournalIndex groups entries into effects: an effect is identified by (scope, content key,
 *   occurrence); each dispatch of it is an attempt that starts with a head entry (`running`,
 *   `suspended`, or a one-write `ok`/`error`/`info`) and collects the entries whose refSeq points at
 *   that head (its outcome, resolutions, or a `cancelled` invalidation). A rerun appends a new
 *   attempt with the same identity; the latest attempt is the one replay looks at.
 * - ReplayCursor (replay-cursor.ts) does the scoped forward matching: one cursor per scope, a call
 *   consumes the unconsumed effect with its identity, a miss consumes nothing and moves nothing.
 * - replayDecide is the table of DESIGN "What replay does with a matched entry", plus the verdict
 *   that the journal and the code disagree (non-determinism); every verdict is a value.
 * test/replay/replay.test.ts pins every row; test/replay/golden.test.ts pins recorded journals.
 */

export interface CallIdentity {
  scope: string;
  contentKey: string;
  occurrence: number;
}

/**
 * Effects by identity without a string per look-up: content key, then scope, then the occurrence as
 * an index (occurrences of one content key in one scope are dense from 0). A resume of 100,000
 * entries looks up every effect twice (building the index, then each call), and one concatenated
 * key per look-up was a tenth of its time and much of its garbage (docs/performance.md, issue 31).
 */
class EffectsByIdentity {
  private readonly byContent = new Map<string, Map<string, (EffectRecord | undefined)[]>>();

  get(id: CallIdentity): EffectRecord | undefined {
    return this.byContent.get(id.contentKey)?.get(id.scope)?.[id.occurrence];
  }

  set(id: CallIdentity, record: EffectRecord): void {
    let scopes = this.byContent.get(id.contentKey);
    if (!scopes) this.byContent.set(id.contentKey, (scopes = new Map()));
    let list = scopes.get(id.scope);
    if (!list) scopes.set(id.scope, (list = []));
    list[id.occurrence] = record;
  }
}

/** Whether an entry starts an attempt of an effect (as opposed to completing or resolving one). */
export function isEffectHead(e: Pick<JournalEntry, 'kind' | 'status' | 'refSeq'>): boolean {
  if (e.kind === 'status') return false;
  if (e.status === 'running' || e.status === 'suspended') return true;
  return e.refSeq === null && (e.status === 'ok' || e.status === 'error' || e.status === 'cancelled' || e.status === 'info');
}

export interface Attempt {
  head: JournalEntry;
  /** The latest `ok`/`error`/`cancelled` pointing at the head, or null. */
  terminal: JournalEntry | null;
  /** `resolved` and `noop` entries pointing at a suspension head, in seq order (one shared empty list until the first). */
  resolutions: readonly JournalEntry[];
}

/** The resolutions of every attempt that has none: one list, not one per effect (a resume may index 100,000). */
const NO_RESOLUTIONS: readonly JournalEntry[] = Object.freeze([]);

export interface EffectRecord {
  /** The first head entry itself (its scope, content key and occurrence): no object of its own per effect. */
  identity: CallIdentity;
  /** The record's place in JournalIndex.records (the replay cursor marks it consumed by this number). */
  ordinal: number;
  kind: string;
  name: string;
  /** The effect's latest dispatch, which decides replay (earlier ones: JournalIndex.attemptAt their head's seq). */
  latest: Attempt;
  /** Seq of the first head: the effect's position in its scope. */
  firstSeq: number;
}

export function latestAttempt(record: EffectRecord): Attempt {
  return record.latest;
}

/** The entry that says how the latest attempt ended: its terminal, the head itself for a one-write effect, or null. */
export function attemptOutcome(attempt: Attempt): JournalEntry | null {
  if (attempt.terminal) return attempt.terminal;
  return attempt.head.status === 'running' || attempt.head.status === 'suspended' ? null : attempt.head;
}

export class JournalIndex {
  private constructor(
    readonly runId: string,
    /** Every effect, in journal order (by first head). */
    readonly records: readonly EffectRecord[],
    /** identity -> effect */
    private readonly byIdentity: EffectsByIdentity,
    /** scope -> its effects in journal order (by first head) */
    readonly scopes: ReadonlyMap<string, readonly EffectRecord[]>,
    /** attempt by its head's seq (seqs are dense from 0: an array, not a map of 100,000 entries) */
    private readonly attemptsBySeq: readonly (Attempt | undefined)[],
    /** every head in seq order */
    readonly heads: readonly JournalEntry[],
    /** Seq of the latest `status SUCCEEDED` entry (the body returned), or -1. */
    readonly succeededAt: number = -1,
    /** Errors a fork's source handled and went on from after the fork point (ForkPayload.continued): they re-throw. */
    readonly handled: ReadonlySet<number> = new Set(),
  ) {}

  static build(runId: string, entries: readonly JournalEntry[]): JournalIndex {
    const records: EffectRecord[] = [];
    const byIdentity = new EffectsByIdentity();
    const scopes = new Map<string, EffectRecord[]>();
    const attempts: (Attempt | undefined)[] = [];
    const heads: JournalEntry[] = [];
    let succeededAt = -1;
    const handled = new Set<number>();
    entries.forEach((e, i) => {
      if (e.seq !== i) throw new JournalCorruptError(runId, e.seq, `expected seq ${i}: seqs must be dense from 0`);
      if (e.kind === 'status') {
        if (isSucceededStatus(e)) succeededAt = e.seq;
        for (const seq of forkContinued(e)) handled.add(seq);
        return;
      }
      if (isEffectHead(e)) {
        const attempt: Attempt = { head: e, terminal: null, resolutions: NO_RESOLUTIONS };
        const record = byIdentity.get(e);
        if (!record) {
          const created: EffectRecord = { identity: e, ordinal: records.length, kind: e.kind, name: e.name, latest: attempt, firstSeq: e.seq };
          byIdentity.set(e, created);
          records.push(created);
          const list = scopes.get(e.scope) ?? [];
          list.push(created);
          scopes.set(e.scope, list);
        } else if (record.kind !== e.kind || record.name !== e.name) {
          throw new JournalCorruptError(runId, e.seq, `${e.kind} "${e.name}" reuses the identity of ${record.kind} "${record.name}"`);
        } else {
          record.latest = attempt;
        }
        attempts[e.seq] = attempt;
        heads.push(e);
        return;
      }
      const target = e.refSeq === null ? undefined : attempts[e.refSeq];
      if (!target) {
        throw new JournalCorruptError(runId, e.seq, `${e.status} entry refers to seq ${e.refSeq} which starts no effect`);
      }
      if (e.status === 'resolved' || e.status === 'noop') {
        if (target.head.status !== 'suspended') {
          throw new JournalCorruptError(runId, e.seq, `resolution refers to seq ${e.refSeq} which is not a suspension`);
        }
        // The shared empty list is replaced by the attempt's own, which is appended to from then on
        // (a copy per resolution was quadratic in the no-ops a wait collects).
        if (target.resolutions === NO_RESOLUTIONS) target.resolutions = [e];
        else (target.resolutions as JournalEntry[]).push(e);
      } else if (e.status === 'ok' || e.status === 'error' || e.status === 'cancelled') {
        target.terminal = e;
      }
      // An `info` entry pointing at an effect is an annotation; replay ignores it.
    });
    return new JournalIndex(runId, records, byIdentity, scopes, attempts, heads, succeededAt, handled);
  }

  record(identity: CallIdentity): EffectRecord | undefined {
    return this.byIdentity.get(identity);
  }

  /** The attempt whose head entry is at `seq`, if one is. */
  attemptAt(seq: number): Attempt | undefined {
    return this.attemptsBySeq[seq];
  }

  /**
   * Whether an effect started after `seq` in the scope of `record`, an enclosing scope, a nested
   * one or a later call site of an enclosing scope: evidence that the code handled the error at
   * `seq` and moved on. Progress in a concurrent sibling branch of the same call site is not.
   * The run's own SUCCEEDED entry after `seq` is evidence too: the body returned, so an error
   * before it was handled (caught as the last effect, then `return`).
   */
  continuedAfter(record: EffectRecord, seq: number): boolean {
    if (this.succeededAt > seq || this.handled.has(seq)) return true;
    // heads are in seq order; a binary search finds the first one after `seq`.
    let lo = 0;
    let hi = this.heads.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.heads[mid]!.seq <= seq) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.heads.length; i++) {
      if (scopeContinues(record.identity.scope, this.heads[i]!.scope)) return true;
    }
    return false;
  }
}

/** A retry's backoff timer: a `suspended` entry of an effect's own kind whose payload key is `retry`. */
function isBackoffTimer(e: JournalEntry): boolean {
  const p = e.payload;
  return p !== null && typeof p === 'object' && !Array.isArray(p) && p.key === 'retry';
}

/**
 * A remote tool call (docs/workers.md): a `suspended` entry of kind `tool` whose payload key is
 * `remote`, resolved by the worker's result (or its deadline), not by a dispatch of this process.
 */
export function isRemoteCall(e: Pick<JournalEntry, 'kind' | 'payload'>): boolean {
  const p = e.payload;
  return e.kind === 'tool' && p !== null && typeof p === 'object' && !Array.isArray(p) && p.key === 'remote';
}

/** A `status` entry recording that the run SUCCEEDED (its body returned). */
function isSucceededStatus(e: JournalEntry): boolean {
  const p = e.payload;
  return p !== null && typeof p === 'object' && !Array.isArray(p) && p.status === 'SUCCEEDED';
}

/** The errors a fork's `status` entry named `fork` says its source handled (ForkPayload, docs/forks.md). */
function forkContinued(e: JournalEntry): number[] {
  const fork = e.name === 'fork' && e.payload !== null && typeof e.payload === 'object' && !Array.isArray(e.payload) ? e.payload.fork : undefined;
  const continued = fork !== null && typeof fork === 'object' && !Array.isArray(fork) ? fork?.continued : undefined;
  return Array.isArray(continued) ? continued.filter((s): s is number => typeof s === 'number') : [];
}

/**
 * Whether work in scope `later` shows that code which saw a failure in scope `failed` went on.
 * Scopes are `/`-separated paths of call sites such as `par:3:1` (branch 1 of parallel site 3).
 * Two paths that first differ in branches of the same site are concurrent siblings: no evidence.
 */
export function scopeContinues(failed: string, later: string): boolean {
  const a = failed === '' ? [] : failed.split('/');
  const b = later === '' ? [] : later.split('/');
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] === b[i]) continue;
    const siteA = a[i]!.slice(0, a[i]!.lastIndexOf(':'));
    const siteB = b[i]!.slice(0, b[i]!.lastIndexOf(':'));
    return !(siteA !== '' && siteA === siteB);
  }
  return true;
}

/** Joins a scope and a call site: `''` + `par:0:1` = `par:0:1`; `par:0:1` + `par:2:0` = `par:0:1/par:2:0`. */
export function childScope(parent: string, segment: string): string {
  return parent === '' ? segment : `${parent}/${segment}`;
}

export type ReplayDecision =
  /** No effect in the journal: run it (a miss). */
  | { action: 'live' }
  /** `ok`: return the recorded value, do not run. */
  | { action: 'return'; value: Json | null; entry: JournalEntry }
  /** `error` and the code moved on after it: re-throw the recorded error. */
  | { action: 'throw'; error: RunError; entry: JournalEntry }
  /** `error` at the end of its branch, or `cancelled`: run it again as a new attempt. */
  | { action: 'rerun'; because: 'error' | 'cancelled'; entry: JournalEntry }
  /** `running` without a terminal: dispatch again under the same intent and idempotency key. */
  | { action: 'redispatch'; head: JournalEntry }
  /** `suspended` with a valid resolution: return the first valid one's payload. */
  | { action: 'resolved'; suspension: JournalEntry; resolution: JournalEntry; invalidResolutions: number }
  /** `suspended` and still open: park. */
  | { action: 'park'; suspension: JournalEntry; invalidResolutions: number }
  /**
   * The matched effect is not what the code called: another kind or name under the same content
   * key, a dispatched effect matching a wait, or a wait matching a dispatched effect. The journal
   * and the code disagree; the caller fails the call with a NonDeterminismError built from these.
   */
  | { action: 'nondeterministic'; expected: string; found: string; detail: string };

/** What the code called, compared with the matched effect. */
export interface CallExpectation {
  kind: EntryKind;
  name: string;
}

/**
 * How a call of this kind meets the journal: a dispatched `effect` (intent, execute, outcome), a
 * `wait` on a suspension, or a `reservation` (ctx.agent: an identity, no entry of its own).
 */
export type CallShape = 'effect' | 'wait' | 'reservation';

export function callShape(kind: EntryKind): CallShape {
  switch (kind) {
    case 'sleep':
    case 'signal':
    case 'approval':
    case 'child':
      return 'wait';
    case 'agent':
      return 'reservation';
    default:
      return 'effect';
  }
}

export interface DecideOptions {
  index: JournalIndex;
  /** Validates a resolution against the schema pinned in its suspension; all valid when absent. */
  resolutionIsValid?: (suspension: JournalEntry, resolution: JournalEntry) => boolean;
  /** The call being matched; when given, a journal that disagrees with it is the `nondeterministic` verdict. */
  call?: CallExpectation;
}

/**
 * DESIGN "What replay does with a matched entry", for the latest attempt of a matched effect; with
 * `options.call`, first whether the effect is what the code called (docs/journal.md "Matching").
 */
export function replayDecide(record: EffectRecord | undefined, options: DecideOptions): ReplayDecision {
  if (!record) return { action: 'live' };
  const { call } = options;
  if (call && (record.kind !== call.kind || record.name !== call.name)) {
    return { action: 'nondeterministic', expected: `${call.kind} "${call.name}"`, found: `${record.kind} "${record.name}"`, detail: `same content key ${record.identity.contentKey}` };
  }
  const decision = decideMatched(record, options);
  if (!call) return decision;
  switch (callShape(call.kind)) {
    case 'effect':
      // A dispatched effect may rerun a cancelled wait, and waits on its own backoff timers (a
      // retry, docs/journal.md "Retries") and on its remote call (a tool served by a worker); it
      // never takes another wait's resolution or parks on it.
      return (decision.action === 'resolved' || decision.action === 'park') && !isBackoffTimer(decision.suspension) && !isRemoteCall(decision.suspension)
        ? { action: 'nondeterministic', expected: `${call.kind} "${call.name}"`, found: `a ${decision.action} suspension`, detail: 'an effect matched a wait' }
        : decision;
    case 'wait':
      return decision.action === 'return' || decision.action === 'throw' || decision.action === 'redispatch'
        ? { action: 'nondeterministic', expected: `a ${call.kind} wait "${call.name}"`, found: `an effect (${decision.action})`, detail: 'a wait matched an effect' }
        : decision;
    case 'reservation':
      return decision;
  }
}

/** The table itself: what the latest attempt of a matched effect says. */
function decideMatched(record: EffectRecord, options: DecideOptions): ReplayDecision {
  const attempt = latestAttempt(record);
  const { head } = attempt;
  if (head.status === 'suspended') {
    if (attempt.terminal?.status === 'cancelled') return { action: 'rerun', because: 'cancelled', entry: attempt.terminal };
    let invalid = 0;
    for (const resolution of attempt.resolutions) {
      if (options.resolutionIsValid && !options.resolutionIsValid(head, resolution)) {
        invalid++;
        continue;
      }
      return { action: 'resolved', suspension: head, resolution, invalidResolutions: invalid };
    }
    return { action: 'park', suspension: head, invalidResolutions: invalid };
  }
  const outcome = attemptOutcome(attempt);
  if (outcome === null) return { action: 'redispatch', head };
  switch (outcome.status) {
    case 'ok':
    case 'info':
      return { action: 'return', value: outcome.payload, entry: outcome };
    case 'error':
      return options.index.continuedAfter(record, outcome.seq)
        ? { action: 'throw', error: outcome.error ?? { name: 'Error', message: 'recorded without details' }, entry: outcome }
        : { action: 'rerun', because: 'error', entry: outcome };
    case 'cancelled':
      return { action: 'rerun', because: 'cancelled', entry: outcome };
    default:
      throw new JournalCorruptError(options.index.runId, outcome.seq, `an effect cannot end with status ${outcome.status}`);
  }
}

/** Latest attempts of suspensions with no valid resolution and not invalidated: what the run waits on. */
export function openSuspensions(
  index: JournalIndex,
  resolutionIsValid?: (suspension: JournalEntry, resolution: JournalEntry) => boolean,
): JournalEntry[] {
  const open: JournalEntry[] = [];
  for (const record of index.records) {
    const decision = replayDecide(record, resolutionIsValid ? { index, resolutionIsValid } : { index });
    if (decision.action === 'park') open.push(decision.suspension);
  }
  return open.sort((a, b) => a.seq - b.seq);
}
