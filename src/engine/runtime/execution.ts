// runtime/: one execution of a workflow body over a journal snapshot: calls, work in flight, how it ended.
// Must not decide what the run's end writes (engine.ts does) nor write except through its AppendQueue.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Logger } from 'pino';
import { LeaseLostError } from '../../journal/errors.js';
import type { EntryKind, JournalEntry } from '../../journal/journal-entry.js';
import type { Json, Lease, Run } from '../../journal/run.js';
import type { JournalStore } from '../../store/store.js';
import { contentKey, idempotencyKey } from '../replay/content-key.js';
import { NonDeterminismError } from '../errors.js';
import { ReplayCursor } from '../replay/replay-cursor.js';
import { JournalIndex, replayDecide, type CallIdentity, type EffectRecord, type ReplayDecision } from '../replay/replay.js';
import type { Call } from './call.js';
import { AppendQueue, isRefusal, type ProduceEntries } from './append-queue.js';
import { LeaseRenewal } from './lease-renewal.js';
import { PreviewTally, type PreviewCounts } from './preview-tally.js';
import { signalInboxTake } from './signal-inbox.js';
import type { RemoteCalls } from './remote-calls.js';
import type { McpConnector } from './mcp-connector.js';
import type { EffectTracer } from './effect-tracer.js';
import { resolutionIsValid } from './suspension.js';
import { never } from './never.js';

/*
 * One execution of a workflow body over a journal snapshot: it matches calls against the journal,
 * runs what must run live, appends entries through one queue (so heads land in call order), and
 * notices when the body has returned, thrown, or is blocked on open suspensions. The RunDriver decides
 * what to write at the end. In `preview` mode it never writes and stops at the first live call. Its
 * parts: append-queue.ts (writes), lease-renewal.ts (the lease), preview-tally.ts (figures), replay/.
 */

export type ExecutionMode = 'live' | 'preview';

export type ExecutionEnd =
  | { kind: 'returned'; value: unknown }
  | { kind: 'threw'; error: unknown }
  /** Every branch waits on an open suspension and nothing is in flight. */
  | { kind: 'blocked'; parked: JournalEntry[] }
  /**
   * Lease lost, a store failure, (preview) a call that would run live, shutdown (RunDriver.executionsAbort),
   * or the run's deadline passed (`timed_out`: the RunDriver then fails the run). No further writes.
   */
  | { kind: 'stopped'; reason: StopReason; error: unknown };

export type StopReason = 'lease_lost' | 'store_error' | 'live_call' | 'shutdown' | 'timed_out';

/** A reserved call: identity fixed synchronously when the code made it. */
export interface ExecutionOptions {
  run: Run;
  entries: readonly JournalEntry[];
  mode: ExecutionMode;
  /** Required in live mode. */
  store: JournalStore | null;
  lease: Lease | null;
  leaseTtlMs: number;
  renewEveryMs: number;
  now: () => Promise<Date>;
  logger: Logger;
  /** Called after each successful renewal (observability; tests await it). */
  onLeaseRenewed?: (lease: Lease) => void;
  /** Remote tools (docs/workers.md); absent: only in-process tools exist. */
  remote?: RemoteCalls | null;
  /** MCP servers (docs/mcp.md); absent: `ctx.tool('server.tool')` fails when it must call one. */
  mcp?: McpConnector | null;
  /** Spans per live effect attempt (docs/tracing.md); absent: tracing is off. */
  tracer?: EffectTracer | null;
  /** Told of every call as it is matched (the replay check's order watch, runtime/call-order.ts); it must not change the call. */
  observer?: CallObserver | null;
}

/** Sees each call the moment Execution.call matched it: the effect it took (if any) and the verdict, nondeterministic included. */
export interface CallObserver {
  called(call: Call, record: EffectRecord | undefined, decision: ReplayDecision): void;
}

const scopes = new AsyncLocalStorage<{ execution: Execution; scope: string }>();
const LIVE: ReplayDecision = { action: 'live' };

/**
 * A call as Execution.call reserves it. Its idempotency key (a sha256) is computed on first read:
 * only a call that runs live hands it out, and a resume replays up to 100,000 calls that never do.
 */
class ReservedCall implements Call {
  decision: ReplayDecision = LIVE;

  constructor(
    readonly identity: CallIdentity,
    readonly kind: EntryKind,
    readonly name: string,
    private readonly runId: string,
    private key: string | null = null,
  ) {}

  get idempotencyKey(): string {
    return (this.key ??= idempotencyKey({ runId: this.runId, ...this.identity }));
  }

  set idempotencyKey(key: string) {
    this.key = key;
  }
}

export class Execution {
  readonly run: Run;
  readonly mode: ExecutionMode;
  readonly index: JournalIndex;
  readonly cursor: ReplayCursor;
  readonly abort = new AbortController();
  /** Remote tools' declarations and dispatch (docs/workers.md); null: only in-process tools. */
  readonly remote: RemoteCalls | null;
  /** MCP servers (docs/mcp.md); null: none reachable from this execution. */
  readonly mcp: McpConnector | null;
  readonly tracer: EffectTracer | null;

  /** Read-only use outside this class, but for model call deltas (delta-publisher.ts), which are not the journal. */
  readonly store: JournalStore | null;
  private readonly tally: PreviewTally;
  /** Live executions only (a store and a lease): the writes and the lease they are fenced with. */
  private readonly appends: AppendQueue | null = null;
  private readonly renewal: LeaseRenewal | null = null;
  private readonly occurrences = new Map<string, Map<string, number>>(); // content key -> scope -> calls so far (no string per call)
  private readonly sites = new Map<string, number>();
  private readonly parked = new Map<number, JournalEntry>();
  /** Entries this execution wrote or was handed back by the store (runtime/resume-cache.ts keeps them with the read ones). */
  private readonly written: JournalEntry[] = [];
  private pending = 0;
  private generation = 0;
  private checkScheduled = false;
  private bodySettled: ExecutionEnd | null = null;
  private end: ExecutionEnd | null = null;
  private resolveEnd!: (end: ExecutionEnd) => void;
  private readonly ended = new Promise<ExecutionEnd>((resolve) => (this.resolveEnd = resolve));
  private quietWaiters: Array<() => void> = [];

  constructor(private readonly options: ExecutionOptions) {
    this.run = options.run;
    this.mode = options.mode;
    this.store = options.store;
    this.remote = options.remote ?? null;
    this.mcp = options.mcp ?? null;
    this.tracer = options.mode === 'live' ? options.tracer ?? null : null;
    this.index = JournalIndex.build(options.run.id, options.entries);
    this.cursor = new ReplayCursor(this.index);
    this.tally = new PreviewTally(this.index, options.mode === 'preview');
    if (options.store && options.lease) {
      this.appends = new AppendQueue(options.store, this);
      this.renewal = new LeaseRenewal({
        store: options.store, lease: options.lease, ttlMs: options.leaseTtlMs, everyMs: options.renewEveryMs,
        logger: options.logger, runId: options.run.id, onRenewed: options.onLeaseRenewed, onLost: (error) => this.stop('lease_lost', error),
      });
    }
  }

  /** The run's lease as last renewed (null in preview): every write of this execution is fenced with it. */
  get lease(): Lease | null {
    return this.renewal !== null ? this.renewal.lease : this.options.lease;
  }

  /** The replay figures so far (ResumeRun's dry run reads them). */
  get counts(): PreviewCounts {
    return this.tally.counts;
  }

  get logger(): Logger {
    return this.options.logger;
  }

  now(): Promise<Date> {
    return this.options.now();
  }

  /** Runs `body` at the root scope and resolves once it returned, threw, blocked or was stopped. */
  start(body: () => Promise<unknown>): Promise<ExecutionEnd> {
    if (this.mode === 'live') this.renewal?.start();
    const settled = (end: ExecutionEnd): void => {
      if (this.end || this.bodySettled) return;
      this.bodySettled = end;
      if (this.pending === 0) this.conclude(end);
    };
    scopes.run({ execution: this, scope: '' }, () => {
      let result: Promise<unknown>;
      try {
        result = Promise.resolve(body());
      } catch (error) {
        result = Promise.reject(error);
      }
      result.then((value) => settled({ kind: 'returned', value }), (error) => settled({ kind: 'threw', error }));
    });
    this.scheduleCheck();
    return this.ended;
  }

  /** The scope of the code calling now: from the branch ctx it used, or the async context. */
  currentScope(bound: string | null): string {
    if (bound !== null) return bound;
    const s = scopes.getStore();
    return s && s.execution === this ? s.scope : '';
  }

  /** Runs `fn` with `scope` as the async context's scope (for ctx.parallel branches). */
  inScope<T>(scope: string, fn: () => Promise<T>): Promise<T> {
    return scopes.run({ execution: this, scope }, fn);
  }

  /** Reserves the next parallel call site of a scope, synchronously. */
  nextSite(scope: string): number {
    const n = this.sites.get(scope) ?? 0;
    this.sites.set(scope, n + 1);
    return n;
  }

  /**
   * Reserves a call's identity and matches it against the journal, synchronously, so concurrent
   * calls keep the identities their call order gives them whatever order they finish in.
   */
  call(kind: EntryKind, name: string, args: Json, scope: string): Call {
    const key = contentKey({ kind, name, args });
    if (this.end) {
      // Over: the call will never settle; leave the cursor and the figures as they were.
      return new ReservedCall({ scope, contentKey: key, occurrence: -1 }, kind, name, this.run.id, '');
    }
    const byScope = this.occurrences.get(key) ?? this.occurrences.set(key, new Map()).get(key)!;
    const occurrence = byScope.get(scope) ?? 0;
    byScope.set(scope, occurrence + 1);
    const identity = { scope, contentKey: key, occurrence };
    const record = this.cursor.take(identity);
    const call = new ReservedCall(identity, kind, name, this.run.id);
    // The call is its own expectation (kind, name): replayDecide says whether the journal agrees.
    const decision = replayDecide(record, { index: this.index, resolutionIsValid, call });
    this.options.observer?.called(call, record, decision);
    if (decision.action === 'nondeterministic') {
      throw new NonDeterminismError(this.run.id, scope, decision.expected, decision.found, decision.detail);
    }
    call.decision = decision;
    this.bump();
    return call;
  }

  /** Counts a journal answer (preview figures), and in preview lists it with the resolutions skipped as invalid. */
  hit(call: Call, invalidResolutions = 0): void {
    if (this.end) return;
    this.tally.hit(call, invalidResolutions);
  }

  /**
   * Called before a call goes live. In live mode returns true; in preview mode counts it, ends the
   * preview and returns false (the caller then never settles).
   */
  goLive(call: Call): boolean {
    if (this.mode === 'live') return !this.end;
    this.stop('live_call', this.tally.liveCall(call));
    return false;
  }

  /**
   * Appends entries through the execution's single queue (append-queue.ts), in the order calls were
   * made. `produce` runs when the entry's turn comes (so it may read the clock). A refusal (payload
   * too large, journal full: nothing was written) rejects, so the workflow sees it like any other
   * error. On any other store failure the execution stops, and the caller's promise never settles:
   * nothing more is written by this worker.
   */
  append(produce: ProduceEntries): Promise<JournalEntry[]> {
    if (this.end || !this.appends) return never();
    this.pending++;
    return this.appends.push(produce).then(
      (entries) => {
        if (entries) this.written.push(...entries);
        this.release();
        return entries ?? never();
      },
      (error: unknown) => {
        if (isRefusal(error)) {
          this.release();
          throw error;
        }
        this.stop(error instanceof LeaseLostError ? 'lease_lost' : 'store_error', error);
        this.release();
        return never();
      },
    );
  }

  /** A `signal` wait about to park takes the earliest buffered signal of its name (signal-inbox.ts); null in preview. */
  signalInboxTake(suspension: JournalEntry): Promise<JournalEntry | null> {
    if (this.mode !== 'live' || !this.store || !this.lease) return Promise.resolve(null);
    return signalInboxTake({ store: this.store, lease: () => this.lease!, suspension, logger: this.logger }).then((winner) => {
      if (winner) this.written.push(winner);
      return winner;
    });
  }

  /**
   * Every journal entry this execution knows: the ones it started from and the ones it wrote (or
   * read back from a store write), in no particular order and maybe with gaps (entries written by
   * others meanwhile). What a parked run leaves in the resume cache.
   */
  known(): JournalEntry[] {
    return this.options.entries.concat(this.written);
  }

  /** Tracks work in flight (an executing effect) so the run is not taken for blocked meanwhile. */
  async track<T>(work: () => Promise<T>): Promise<T> {
    this.pending++;
    try {
      return await work();
    } finally {
      this.release();
    }
  }

  /**
   * A read of the store the body's next decision depends on (an agent's budget check folds spend
   * from the journal). Tracked like an effect; a failure stops the execution without writes, as a
   * failed append does, so a database blip never fails the run. Live mode only.
   */
  async read<T>(fn: (store: JournalStore) => Promise<T>): Promise<T> {
    const store = this.store;
    if (this.end || !store) return never();
    try {
      return await this.track(() => fn(store));
    } catch (error) {
      this.stop(error instanceof LeaseLostError ? 'lease_lost' : 'store_error', error);
      return never();
    }
  }

  /** Settles when the execution is over, however it ended: resources held for it are given back then. */
  whenEnded(): Promise<ExecutionEnd> {
    return this.ended;
  }

  /** Whether the execution is over (it returned, threw, parked or was stopped): calls never settle then. */
  get over(): boolean {
    return this.end !== null;
  }

  /** Parks on an open suspension: recorded for the "every branch blocked" check. */
  park(suspension: JournalEntry): void {
    this.parked.set(suspension.seq, suspension);
    this.bump();
  }

  /**
   * Resolves once nothing of this execution is in flight: no effect executing, no append queued.
   * After a stop no new effect starts, so this is when it has stopped touching the world.
   */
  quiet(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.quietWaiters.push(resolve));
  }

  /** Ends the execution without further writes (its AbortSignal is aborted). */
  stop(reason: StopReason, error: unknown): void {
    if (this.end) return;
    if (reason !== 'live_call') this.logger.warn({ runId: this.run.id, reason, err: error }, 'execution stopped');
    this.conclude({ kind: 'stopped', reason, error });
  }

  private release(): void {
    this.pending--;
    if (this.pending === 0 && this.quietWaiters.length > 0) for (const resolve of this.quietWaiters.splice(0)) resolve();
    this.bump();
    if (this.pending === 0 && this.bodySettled && !this.end) this.conclude(this.bodySettled);
  }

  private bump(): void {
    this.generation++;
    if (this.pending === 0) this.scheduleCheck();
  }

  /**
   * "Every branch is blocked": nothing in flight, the body not settled, and no ctx activity for a
   * full turn of the event loop (setImmediate runs after every pending microtask, so a body
   * continuing on replayed values has had its chance to make its next call).
   */
  private scheduleCheck(): void {
    if (this.checkScheduled || this.end) return;
    this.checkScheduled = true;
    const seen = this.generation;
    setImmediate(() => {
      this.checkScheduled = false;
      if (this.end || this.bodySettled || this.pending > 0) return;
      if (seen !== this.generation) return this.scheduleCheck();
      if (this.parked.size > 0) {
        this.conclude({ kind: 'blocked', parked: [...this.parked.values()].sort((a, b) => a.seq - b.seq) });
      }
      // Otherwise the body awaits something outside ctx (a plain timer): it will call back.
    });
  }

  private conclude(end: ExecutionEnd): void {
    if (this.end) return;
    this.end = end;
    this.renewal?.stop();
    if (end.kind === 'stopped') this.abort.abort(end.error);
    this.resolveEnd(end);
  }
}
