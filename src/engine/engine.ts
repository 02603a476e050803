// engine/: class Engine, the use cases (start, execute, signal, decide, cancel, resume, read) over a JournalStore.
// Must not know the transport or a store implementation: server/ and cli/ call it, never the reverse.
import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { LeaseLostError, PayloadTooLargeError, RunStateError, UnstorableValueError, WorkflowNotFoundError } from '../journal/errors.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../journal/run.js';
import type { JournalEntry } from '../journal/journal-entry.js';
import type { JournalStore, RunLeaseAcquireRunningResult, ServedWorkflow } from '../store/store.js';
import { approvalGet, approvalList, type ApprovalListParams, type ApprovalView } from './runtime/approvals.js';
import { schemaHash, toJson } from './replay/content-key.js';
import { errorRecord } from './replay/error-codec.js';
import { ExecutionAbortedError, FlowDriftError, InvalidInputError, InvalidOutputError, RunTimedOutError } from './author/errors.js';
import { Execution, type ExecutionEnd } from './runtime/execution.js';
import { validatePinned, zodViolations } from './replay/payload-schema.js';
import type { Registry } from './registry.js';
import { invalidationEntries, JournalIndex } from './replay/replay.js';
import { PARENT_TIMED_OUT_ENDING, runChildrenCancel, runEnd, runTimedOutRecord, type RunEnder, type RunEnding } from './runtime/run-ending.js';
import * as resolutions from './runtime/resolutions.js';
import { signalSend, type SignalSendParams, type SignalSendResult } from './runtime/signal-inbox.js';
import { replayHistory, type ReplayPreview } from './runtime/resume-preview.js';
import { openWaits, waitingOf, type Waiting } from './runtime/suspension.js';
import type { Workflow } from './author/workflow.js';
import { WorkflowContextImpl, type ChildStarter } from './runtime/workflow-context.js';
import { FlowCatalog } from './flow/flow-catalog.js';
import { RemoteCalls, type RemoteCallsOptions } from './runtime/remote-calls.js';
import { JOURNAL_PAGE_SIZE, journalReadAll } from './runtime/journal-read.js';
import { ResumeCache, type ResumeCacheOptions } from './runtime/resume-cache.js';

export interface EngineOptions {
  store: JournalStore;
  registry: Registry;
  /** This worker's id, recorded as the lease holder. */
  holder: string;
  leaseTtlMs: number;
  logger?: Logger;
  /** The clock ctx.now() and deadlines read; default the store's (database) clock. */
  clock?: () => Date | Promise<Date>;
  /** Default a third of leaseTtlMs. */
  renewEveryMs?: number;
  /** Remote tools (docs/workers.md): declaration cache and poll interval. */
  remote?: RemoteCallsOptions;
  /** Entries per read when an execution reads its journal to replay it; default JOURNAL_PAGE_SIZE (5,000). */
  journalPageSize?: number;
  /** Hot resume (runtime/resume-cache.ts): how many journal entries of parked runs this engine keeps. */
  resumeCache?: ResumeCacheOptions;
}

export interface RunStartParams {
  namespace: string;
  workflowName: string;
  input: unknown;
  idempotencyKey?: string | null;
  labels?: Record<string, string>;
  budgetUsd?: number | null;
  dryRun?: boolean;
  parentRunId?: string | null;
  parentSeq?: number | null;
  /**
   * The run timeout in milliseconds (StartRun `timeout`): replaces the definition's `timeout` for
   * this run. Absent or null: the definition's, if any (docs/workflows.md "Timeouts").
   */
  timeoutMs?: number | null;
  /** Execute it here until it ends or parks (StartRun with wait). Default false: PENDING for an executor. */
  execute?: boolean;
}

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
}

/** What `engine.events` emits; the server turns them into metrics, tests await them. */
export interface EngineEvents {
  /** Each time an execution starts under a lease (first round and re-takes); an executor tracks it to release on shutdown. */
  'lease-acquired': [{ runId: string; lease: Lease }];
  'lease-renewed': [{ runId: string; lease: Lease }];
  'execution-ended': [ExecuteResult];
}

/**
 * How an execution under a lease starts (Engine.executeOnce): a lease alone (the RUNNING entry is
 * written there), a run created here with its lease and RUNNING entry (runCreate with
 * recordRunning: the journal is that entry), or a lease taken with its RUNNING entry
 * (runLeaseAcquireRunning: the run row after it, and that entry).
 */
type LeasedStart = { lease: Lease; created?: Run } | RunLeaseAcquireRunningResult;

/** Statuses a resume may take a run from (a RUNNING one only once its lease expired). */
const RESUMABLE: RunStatus[] = ['PENDING', 'RUNNING', 'SUSPENDED', 'FAILED', 'CANCELLED', 'SUCCEEDED'];
/** A resolution arriving while a run parks makes it PENDING; continuing here saves a queue hop, a few times at most. */
const MAX_ROUNDS = 8;

/**
 * Runs workflows over a JournalStore (docs/journal.md): starts, executes, previews, resumes and
 * cancels runs, and applies signals, approval decisions and deadlines. Stateless between calls;
 * any number of engines on any number of replicas may share one store.
 */
export class Engine {
  readonly store: JournalStore;
  readonly registry: Registry;
  readonly holder: string;
  readonly leaseTtlMs: number;
  readonly events = new EventEmitter<EngineEvents>();
  /** The declarative flows of the store (flow/flow-catalog.ts): every replica serves them. */
  readonly flows: FlowCatalog;
  /** Remote tools: what ctx.tool reads of their declarations and how calls become tasks (docs/workers.md). */
  readonly remote: RemoteCalls;
  /** The journals of runs that parked here (docs/recovery.md "Hot resume"): their next execution here reads none of it again. */
  readonly resumes: ResumeCache;
  private readonly logger: Logger;
  private readonly clock: () => Promise<Date>;
  private readonly renewEveryMs: number;
  private readonly journalPageSize: number;
  /** Live executions of this engine, from start until nothing of them is in flight (Execution.quiet). */
  private readonly executing = new Map<string, Execution>();
  /** Runs executionsAbort named before their execution existed: it stops before it starts. */
  private readonly abortRequested = new Set<string>();
  private served: ServedWorkflow[] | null = null;

  constructor(options: EngineOptions) {
    if (!(options.leaseTtlMs > 0)) throw new RangeError(`leaseTtlMs must be > 0, got ${options.leaseTtlMs}`);
    this.store = options.store;
    this.registry = options.registry;
    this.holder = options.holder;
    this.leaseTtlMs = options.leaseTtlMs;
    this.logger = options.logger ?? pino({ enabled: false });
    const clock = options.clock;
    this.clock = clock ? async () => clock() : () => this.store.clockNow();
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(options.leaseTtlMs / 3));
    this.journalPageSize = options.journalPageSize ?? JOURNAL_PAGE_SIZE;
    if (!(Number.isInteger(this.journalPageSize) && this.journalPageSize > 0)) {
      throw new RangeError(`journalPageSize must be a positive integer, got ${this.journalPageSize}`);
    }
    this.flows = new FlowCatalog(this.store, this.registry);
    this.remote = new RemoteCalls(options.store, options.remote);
    this.resumes = new ResumeCache(options.resumeCache);
  }

  /**
   * Validates the input (InvalidInputError with field violations, nothing written), creates the
   * run (a repeated idempotency key returns the first run), and with `execute` drives it here until
   * it ends or parks.
   */
  async runStart(params: RunStartParams): Promise<{ run: Run; created: boolean; execution: ExecuteResult | null; waitingOn: Waiting[] }> {
    // A declarative flow of the namespace is local to every replica (it lives in the store).
    const local = this.registry.has(params.workflowName) ? this.registry.workflow(params.workflowName)
      : await this.flows.workflowFor(params.namespace, params.workflowName);
    // Routing (docs/recovery.md "Routing"): a workflow this replica lacks is started for a live
    // replica that serves it (its newest definition), validated against that replica's input schema.
    const workflow: Pick<Workflow, 'name' | 'version' | 'digest'> & { timeoutMs?: number | null } = local ?? (await this.servedElsewhere(params.workflowName));
    if (local) {
      const parsed = local.input.safeParse(params.input);
      if (!parsed.success) throw new InvalidInputError(`the input of workflow "${local.name}"`, zodViolations(parsed.error));
    } else {
      const served = workflow as ServedWorkflow;
      const violations = served.inputSchema === null ? [] : validatePinned({ schema: served.inputSchema, schemaHash: schemaHash(served.inputSchema) }, toJson(params.input, `the input of workflow "${served.name}"`));
      if (violations.length > 0) throw new InvalidInputError(`the input of workflow "${served.name}"`, violations);
    }
    const execute = params.execute && local !== null;
    const { run, created, lease } = await this.store.runCreate({
      namespace: params.namespace,
      workflowName: workflow.name,
      workflowVersion: workflow.version,
      workflowDigest: workflow.digest,
      input: toJson(params.input, `the input of workflow "${workflow.name}"`),
      labels: params.labels ?? {},
      idempotencyKey: params.idempotencyKey ?? null,
      parentRunId: params.parentRunId ?? null,
      parentSeq: params.parentSeq ?? null,
      budgetUsd: params.budgetUsd ?? null,
      dryRun: params.dryRun ?? false,
      // StartRun's timeout replaces the definition's (as a Temporal start option sets the run's timeout).
      timeoutMs: params.timeoutMs ?? workflow.timeoutMs ?? null,
      ...(execute ? { leaseFor: { holder: this.holder, ttlMs: this.leaseTtlMs, recordRunning: true } } : {}),
    });
    if (!lease) return { run, created, execution: null, waitingOn: await this.runWaits({ runId: run.id, namespace: run.namespace }) };
    // Created with its RUNNING entry (recordRunning): the journal is that one entry, nothing to read.
    const execution = await this.executeLeased({ lease, created: run });
    return { run: execution.run ?? run, created, execution, waitingOn: execution.waitingOn };
  }

  /**
   * The definitions this replica serves (routing): what its heartbeat records and its claims ask
   * for. Computed once; the registry does not change after start.
   */
  serves(): ServedWorkflow[] {
    this.served ??= this.registry.workflows().map((w) => ({
      name: w.name, version: w.version, digest: w.digest, drift: w.drift, description: w.description, inputSchema: w.inputSchema,
      timeoutMs: w.timeoutMs,
    }));
    return this.served;
  }

  /**
   * What the store's live replicas serve (ListWorkflows), one entry per name and digest with the
   * replicas serving it, by name, newest replica first; this replica's own definitions are always
   * in it, registered or not yet.
   */
  async workflowsServed(params: { namespace?: string } = {}): Promise<{ workflow: ServedWorkflow; replicas: string[] }[]> {
    const byKey = new Map<string, { workflow: ServedWorkflow; replicas: string[] }>();
    const add = (workflow: ServedWorkflow, replica: string | null) => {
      const key = `${workflow.name}\u0000${workflow.digest}`;
      const entry = byKey.get(key) ?? { workflow, replicas: [] };
      if (replica !== null && !entry.replicas.includes(replica)) entry.replicas.push(replica);
      byKey.set(key, entry);
    };
    const replicas = await this.store.replicaList();
    for (const replica of replicas) for (const w of replica.workflows) add(w, replica.replicaId);
    for (const w of this.serves()) add(w, null);
    // The namespace's flows: every live replica serves them (they live in the store).
    if (params.namespace !== undefined) {
      for (const record of await this.flows.list({ namespace: params.namespace })) {
        const w = this.flows.workflowOf(record);
        const served: ServedWorkflow = {
          name: w.name, version: w.version, digest: w.digest, drift: w.drift, description: w.description, inputSchema: w.inputSchema, timeoutMs: w.timeoutMs,
        };
        byKey.set(`${w.name}\u0000${w.digest}`, { workflow: served, replicas: replicas.map((r) => r.replicaId) });
      }
    }
    return [...byKey.values()].sort((a, b) => (a.workflow.name < b.workflow.name ? -1 : a.workflow.name > b.workflow.name ? 1 : 0));
  }

  /** The newest definition of `name` a live replica serves; WorkflowNotFoundError when none does. */
  private async servedElsewhere(name: string): Promise<ServedWorkflow> {
    for (const replica of await this.store.replicaList()) {
      const served = replica.workflows.find((w) => w.name === name);
      if (served) return served;
    }
    throw new WorkflowNotFoundError(name);
  }

  /**
   * Executes a run under `lease` (from runClaim), or takes the lease of `runId` first (null when
   * someone else holds it). Reads the journal only after the lease is committed.
   */
  async runExecute(params: { lease: Lease } | { taken: RunLeaseAcquireRunningResult } | { runId: string; namespace?: string }): Promise<ExecuteResult | null> {
    if ('lease' in params) return this.executeLeased({ lease: params.lease });
    if ('taken' in params) return this.executeLeased(params.taken);
    // The lease and the RUNNING entry in one statement (the execution then writes no RUNNING itself).
    const taken = await this.store.runLeaseAcquireRunning({
      runId: params.runId, holder: this.holder, ttlMs: this.leaseTtlMs, ...(params.namespace ? { namespace: params.namespace } : {}),
    });
    return taken ? this.executeLeased(taken) : null;
  }

  /**
   * Claims and executes PENDING runs until none is left (or `maxRuns` executions): what an executor
   * loop does on each wake-up, and how tests drive children and resolved runs.
   */
  async runExecutePending(params: { limit?: number; namespace?: string; maxRuns?: number } = {}): Promise<ExecuteResult[]> {
    const results: ExecuteResult[] = [];
    const maxRuns = params.maxRuns ?? 1000;
    while (results.length < maxRuns) {
      const leases = await this.store.runClaim({
        holder: this.holder, ttlMs: this.leaseTtlMs, limit: Math.min(params.limit ?? 10, maxRuns - results.length),
        ...(params.namespace ? { namespace: params.namespace } : {}), serves: this.serves(), flows: true,
      });
      if (leases.length === 0) break;
      for (const lease of leases) results.push(await this.executeLeased({ lease }));
    }
    return results;
  }

  /** Resolves the oldest open wait of the signal's name, or buffers the signal for the next one (signal-inbox.ts). */
  async signalSend(params: SignalSendParams, options: { take?: boolean } = {}): Promise<SignalSendResult> {
    // A run parked here: the wait it parked on is the likely target, which saves the look-up (signal-inbox.ts).
    // `take`: the run's lease comes with the delivery when it makes the run runnable (the caller then
    // executes it with runExecute({ taken }), or releases it).
    const send = options.take ? { ...params, leaseFor: { holder: this.holder, ttlMs: this.leaseTtlMs } } : params;
    const result = await signalSend(this.store, send, this.resumes.openWait(params.runId, 'signal', params.name));
    this.resumes.note(result.entry);
    return result;
  }

  async approvalDecide(params: resolutions.ApprovalDecideParams): Promise<resolutions.ResolveResult> {
    const result = await resolutions.approvalDecide(this.store, params);
    this.resumes.note(result.entry);
    return result;
  }

  /** ListApprovals: pending ones by default, oldest first (approvals.ts). */
  approvalList(params: ApprovalListParams): Promise<{ approvals: ApprovalView[]; nextCursor: string | null }> {
    return approvalList(this.store, params);
  }

  /** GetApproval; ApprovalNotFoundError for an unknown id. */
  approvalGet(params: { namespace: string; approvalId: string }): Promise<ApprovalView> {
    return approvalGet(this.store, params);
  }

  /** For the sweeper: resolves due deadlines with their default decisions. */
  suspensionsResolveDue(params: { limit: number }): ReturnType<typeof resolutions.suspensionsResolveDue> {
    return resolutions.suspensionsResolveDue(this.store, { limit: params.limit, logger: this.logger });
  }

  /** For whoever ends a child run (and the sweeper): closes the parent's `child` wait. */
  async childResolveParent(params: { child: Run }): Promise<resolutions.ResolveResult | null> {
    const result = await resolutions.childResolveParent(this.store, params.child, this.logger);
    this.resumes.note(result?.entry);
    return result;
  }

  /** What a run waits on now: its open suspensions. */
  async runWaits(params: { runId: string; namespace: string }): Promise<Waiting[]> {
    // The run's waits and what refers to them, not its journal (issue 22).
    const waits = openWaits(await this.store.journalWaits({ runId: params.runId, namespace: params.namespace })).map(waitingOf);
    return waits.some((w) => w.kind === 'tool') ? this.remote.describe(params, waits) : waits;
  }

  /** ResumeRun with dry_run: a replay-strict pass with zero live calls and zero writes. */
  async runPreview(params: { runId: string; namespace: string; invalidate?: number[] }): Promise<ReplayPreview> {
    const run = await this.store.runGet({ runId: params.runId, namespace: params.namespace });
    const entries = await this.store.journalList({ runId: run.id, namespace: params.namespace });
    return replayHistory({
      run, entries, workflow: await this.definitionOf(run), registry: this.registry, logger: this.logger, remote: this.remote,
      ...(params.invalidate ? { invalidate: params.invalidate } : {}),
    });
  }

  /**
   * ResumeRun: unpins the `invalidate` entries (a `cancelled` entry for each, docs/journal.md), then
   * executes the run here (default) or leaves it PENDING for an executor (`runnable`: whoever
   * resumed it may execute it now). A definition that drifted follows the workflow's policy, or
   * `drift` when the caller chose a recovery.
   */
  async runResume(params: {
    runId: string; namespace: string; invalidate?: number[]; execute?: boolean; drift?: 'restart' | 'abandon';
  }): Promise<{ run: Run; execution: ExecuteResult | null; restartedAs: Run | null; runId: string; runnable: boolean }> {
    const run = await this.store.runGet({ runId: params.runId, namespace: params.namespace });
    const workflow = await this.definitionOf(run);
    if (run.workflowDigest !== workflow.digest) {
      if (params.drift) return { ...(await this.recoverDrift(run, params.drift)), runId: run.id, runnable: false };
      if (workflow.drift === 'strict') throw new FlowDriftError(run.id, workflow.name, run.workflowDigest, workflow.digest);
      this.logger.warn({ runId: run.id, workflow: workflow.name }, 'resuming against a changed definition (drift policy warn)');
    }
    const invalidate = params.invalidate ?? [];
    // Only invalidations need the journal (issue 22: a plain resume costs the same for any journal length).
    if (invalidate.length > 0) {
      const before = await this.store.journalList({ runId: run.id, namespace: params.namespace });
      invalidationEntries(JournalIndex.build(run.id, before), before, invalidate); // refuse bad targets before any write
    }
    const lease = await this.store.runLeaseAcquire({
      runId: run.id, namespace: params.namespace, holder: this.holder, ttlMs: this.leaseTtlMs, statuses: RESUMABLE,
    });
    if (!lease) throw new RunStateError(run.id, run.status, 'not executing on another worker');
    try {
      if (invalidate.length > 0) {
        const entries = await this.store.journalList({ runId: run.id });
        const cancelled = invalidationEntries(JournalIndex.build(run.id, entries), entries, invalidate);
        if (cancelled.length > 0) await this.store.journalAppend({ lease, entries: cancelled });
      }
    } catch (err) {
      await this.store.runLeaseRelease({ lease }).catch(() => undefined);
      throw err;
    }
    if (params.execute === false) {
      await this.store.runLeaseRelease({ lease });
      return { run: await this.store.runGet({ runId: run.id, namespace: params.namespace }), execution: null, restartedAs: null, runId: run.id, runnable: true };
    }
    const execution = await this.executeLeased({ lease });
    return { run: execution.run ?? run, execution, restartedAs: null, runId: run.id, runnable: false };
  }

  /**
   * CancelRun: journals a `cancelled` entry for each open suspension of a run nobody executes, fences
   * the holder (runStatusForce bumps the epoch), closes the parent's wait, and does the same for the
   * run's unfinished children, recursively (runtime/run-ending.ts). Returns the ids it cancelled.
   */
  async runCancel(params: { runId: string; namespace: string; reason?: string }): Promise<{ run: Run; cancelled: string[] }> {
    const ending: RunEnding = {
      status: 'CANCELLED', error: { name: 'RunCancelledError', message: params.reason ?? 'the run was cancelled', reason: 'cancelled' },
      waitsReason: 'run_cancelled', message: params.reason ?? null,
    };
    const target = { runId: params.runId, namespace: params.namespace };
    this.resumes.drop(params.runId);
    const cancelled: string[] = [];
    if (await runEnd(this.ender, target, ending)) cancelled.push(params.runId);
    cancelled.push(...(await runChildrenCancel(this.ender, target, ending)));
    return { run: await this.store.runGet(target), cancelled };
  }

  /** How this engine ends runs from outside their execution (cancel, run timeout): as its own holder, closing open waits. */
  private get ender(): RunEnder {
    return { store: this.store, holder: this.holder, leaseTtlMs: this.leaseTtlMs, logger: this.logger, closeWaits: true };
  }

  private async recoverDrift(run: Run, choice: 'restart' | 'abandon'): Promise<{ run: Run; execution: ExecuteResult | null; restartedAs: Run | null }> {
    const reason = `abandoned after its workflow definition changed (${choice})`;
    const { run: ended } = await this.runCancel({ runId: run.id, namespace: run.namespace, reason });
    if (choice === 'abandon') return { run: ended, execution: null, restartedAs: null };
    const started = await this.runStart({
      namespace: run.namespace, workflowName: run.workflowName, input: run.input, labels: { ...run.labels, 'waymark.restarted_from': run.id },
      budgetUsd: run.budgetUsd, dryRun: run.dryRun, execute: true,
    });
    return { run: ended, execution: started.execution, restartedAs: started.run };
  }

  /**
   * Stops the executions of `runIds` in this process: no further writes, and the AbortSignal handed
   * to their tools and model calls is aborted (an execution not started yet never starts). Returns,
   * per run executing here, a promise that resolves once nothing of it is in flight any more, i.e.
   * once it stopped touching the world; only then may its lease be handed to another worker.
   */
  executionsAbort(params: { runIds: Iterable<string>; why: string }): Map<string, Promise<void>> {
    const settling = new Map<string, Promise<void>>();
    for (const runId of params.runIds) {
      const execution = this.executing.get(runId);
      if (!execution) {
        this.abortRequested.add(runId);
        continue;
      }
      execution.stop('shutdown', new ExecutionAbortedError(runId, params.why));
      settling.set(runId, execution.quiet());
    }
    return settling;
  }

  /** Executes under a lease; if parking found a resolution already waiting, takes the run again here. */
  private async executeLeased(first: LeasedStart): Promise<ExecuteResult> {
    let start = first;
    for (let round = 1; ; round++) {
      const { lease } = start;
      this.events.emit('lease-acquired', { runId: lease.runId, lease });
      const result = await this.executeOnce(start);
      this.events.emit('execution-ended', result);
      if (result.outcome !== 'pending' || round >= MAX_ROUNDS) return result;
      const again = await this.store.runLeaseAcquireRunning({ runId: lease.runId, holder: this.holder, ttlMs: this.leaseTtlMs, statuses: ['PENDING'] });
      if (!again) return result;
      start = again;
    }
  }

  /**
   * One execution under the start's lease (LeasedStart says which writes and reads it still needs).
   */
  private async executeOnce(start: LeasedStart): Promise<ExecuteResult> {
    const { lease } = start;
    const runId = lease.runId;
    let run: Run;
    let running: JournalEntry | null = null;
    if ('entry' in start) ({ run, entry: running } = start);
    else if (start.created) run = start.created;
    else {
      try {
        // Records the RUNNING event and returns the run row (the lease carries no namespace).
        ({ run, entry: running } = await this.store.runStatusSet({ lease, status: 'RUNNING' }));
      } catch (error) {
        return this.stopped(runId, error);
      }
    }
    const log = this.logger.child({ runId, workflow: run.workflowName });
    let workflow: Workflow;
    try {
      workflow = await this.definitionOf(run);
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) return this.stopped(runId, error);
      // Routing: not ours to execute (an inline execution on the wrong replica). Handed back
      // PENDING for a replica that serves it; the sweeper reports it while none does.
      return this.handBack(lease, run, log, 'this replica does not serve the workflow');
    }
    if (run.workflowDigest !== workflow.digest) {
      if (await this.digestServedElsewhere(run)) return this.handBack(lease, run, log, 'a live replica serves the digest the run is pinned to');
      if (workflow.drift === 'strict') {
        const drift = new FlowDriftError(run.id, workflow.name, run.workflowDigest, workflow.digest);
        return this.end(lease, run, { status: 'FAILED', error: errorRecord(drift) }, log);
      }
      log.warn('executing against a changed definition (drift policy warn); the journal decides replay per content key');
    }
    let deadlineIn: number | null = null;
    if (run.deadlineAt !== null) {
      try {
        deadlineIn = run.deadlineAt.getTime() - (await this.clock()).getTime();
      } catch (error) {
        return this.stopped(runId, error);
      }
      // Claimed (or resumed) past its deadline before the sweeper failed it: it fails here, unexecuted.
      if (deadlineIn <= 0) return this.timeOut(lease, run, log);
    }
    let entries: JournalEntry[] = [];
    try {
      // A run created here holds only its RUNNING entry, which replay skips: no read needed.
      if (running) entries = await this.journalOf(lease, workflow, running);
    } catch (error) {
      return this.stopped(runId, error);
    }
    if (this.abortRequested.delete(runId)) return this.stopped(runId, new ExecutionAbortedError(runId, 'stopped before it started'));
    const execution = new Execution({
      run, entries, mode: 'live', store: this.store, lease, leaseTtlMs: this.leaseTtlMs, renewEveryMs: this.renewEveryMs,
      now: this.clock, logger: log, onLeaseRenewed: (renewed) => this.events.emit('lease-renewed', { runId, lease: renewed }),
      remote: this.remote,
    });
    this.executing.set(runId, execution);
    const forget = (): void => {
      if (this.executing.get(runId) === execution) this.executing.delete(runId);
    };
    const ctx = new WorkflowContextImpl(execution, this.registry, this.childStarter(run));
    // The in-process fast path of the run timeout: at the deadline this replica stops the execution
    // (in-flight effects see their AbortSignal fire with RunTimedOutError) and fails the run itself.
    // The sweeper is the guarantee: the deadline is in the run row, this timer only saves the wait.
    if (deadlineIn !== null) this.watchDeadline(execution, run, deadlineIn);
    const parsed = workflow.input.safeParse(run.input);
    const end = await execution.start(async () => {
      if (!parsed.success) throw new InvalidInputError(`the input of workflow "${workflow.name}"`, zodViolations(parsed.error));
      return workflow.body(ctx, parsed.data as never);
    });
    // An execution stopped mid-effect ends at once; it is forgotten when that effect settled.
    void execution.quiet().then(forget);
    return this.finish(execution, workflow, end, log);
  }

  /**
   * The journal an execution under `lease` starts from, `running` being the RUNNING entry just
   * written: what this engine kept when the run parked here plus what was written since (nothing
   * to read when this replica wrote it), or the whole journal when the kept one is not provably
   * current (runtime/resume-cache.ts, docs/recovery.md "Hot resume").
   */
  private async journalOf(lease: Lease, workflow: Workflow, running: JournalEntry): Promise<JournalEntry[]> {
    const runId = lease.runId;
    const kept = this.resumes.resume(runId, { epoch: lease.epoch, digest: workflow.digest, runningSeq: running.seq });
    if (!kept.hit) return journalReadAll(this.store, runId, this.journalPageSize);
    if (kept.readFrom === running.seq) {
      kept.entries.push(running);
      return kept.entries;
    }
    return kept.entries.concat(await this.store.journalList({ runId, afterSeq: kept.readFrom - 1 }));
  }

  private async finish(execution: Execution, workflow: Workflow, end: ExecutionEnd, log: Logger): Promise<ExecuteResult> {
    const lease = execution.lease!;
    const run = execution.run;
    switch (end.kind) {
      case 'stopped':
        if (end.reason === 'timed_out') return this.timeOut(lease, run, log);
        return this.stopped(run.id, end.error);
      case 'blocked':
        // What it parks with stays here for its next execution (hot resume), read or written alike.
        return this.end(lease, run, { status: 'SUSPENDED' }, log, end.parked.map(waitingOf), (entry) => {
          this.resumes.park(run.id, { known: [...execution.known(), entry], epoch: lease.epoch, digest: workflow.digest, waits: end.parked });
        });
      case 'threw':
        return this.end(lease, run, { status: 'FAILED', error: errorRecord(end.error) }, log);
      case 'returned': {
        let output: Json;
        try {
          output = toJson(end.value, `the output of workflow "${workflow.name}"`);
          if (workflow.output) {
            const checked = workflow.output.safeParse(end.value);
            if (!checked.success) throw new InvalidOutputError(workflow.name, zodViolations(checked.error));
          }
        } catch (error) {
          return this.end(lease, run, { status: 'FAILED', error: errorRecord(error) }, log);
        }
        return this.end(lease, run, { status: 'SUCCEEDED', output }, log);
      }
    }
  }

  /**
   * The definition a run executes here: the registry's code workflow, else the latest version of
   * the flow of that name in the run's namespace. WorkflowNotFoundError when this replica has neither.
   */
  private async definitionOf(run: Run): Promise<Workflow> {
    if (this.registry.has(run.workflowName)) return this.registry.workflow(run.workflowName);
    const flow = await this.flows.workflowFor(run.namespace, run.workflowName);
    if (!flow) throw new WorkflowNotFoundError(run.workflowName);
    return flow;
  }

  /** Gives the lease back (the run is PENDING again) for a replica that serves the run's definition. */
  private async handBack(lease: Lease, run: Run, log: Logger, why: string): Promise<ExecuteResult> {
    try {
      await this.store.runLeaseRelease({ lease });
    } catch (error) {
      return this.stopped(run.id, error);
    }
    log.info({ digest: run.workflowDigest }, `run handed back for another replica: ${why}`);
    return { runId: run.id, outcome: 'pending', run: { ...run, status: 'PENDING', leaseHolder: null, leaseExpiresAt: null }, waitingOn: [], error: null };
  }

  /** Whether a live replica serves the run's exact digest (a run goes there rather than drift). */
  private async digestServedElsewhere(run: Run): Promise<boolean> {
    try {
      return (await this.store.replicaList()).some((r) => r.workflows.some((w) => w.name === run.workflowName && w.digest === run.workflowDigest));
    } catch {
      return false;
    }
  }

  /** Writes the run's new status; a terminal one also closes the parent's wait on it. */
  private async end(
    lease: Lease, run: Run, status: { status: RunStatus; output?: Json; error?: RunError }, log: Logger, waitingOn: Waiting[] = [],
    parked?: (entry: JournalEntry) => void,
  ): Promise<ExecuteResult> {
    let after: Run;
    try {
      let entry: JournalEntry;
      ({ run: after, entry } = await this.store.runStatusSet({ lease, ...status }));
      if (parked && (after.status === 'SUSPENDED' || after.status === 'PENDING')) parked(entry);
    } catch (error) {
      if (!(error instanceof PayloadTooLargeError || error instanceof UnstorableValueError) || status.status === 'FAILED') return this.stopped(run.id, error);
      // An output over the payload limit (or holding a NUL) fails the run (nothing was written) instead of looping through recoveries.
      return this.end(lease, run, { status: 'FAILED', error: errorRecord(error) }, log);
    }
    log.info({ status: after.status, error: after.error ?? undefined }, 'execution ended');
    if (after.status === 'SUCCEEDED' || after.status === 'FAILED' || after.status === 'CANCELLED') {
      // Best effort: a failure here leaves the parent waiting until the sweeper resolves it.
      await this.childResolveParent({ child: after }).catch((err: unknown) => log.warn({ err }, 'could not resolve the parent\'s wait; the sweeper will'));
    }
    const outcome: ExecuteOutcome = after.status === 'SUCCEEDED' ? 'succeeded' : after.status === 'FAILED' ? 'failed'
      : after.status === 'PENDING' ? 'pending' : 'suspended';
    return { runId: run.id, outcome, run: after, waitingOn: after.status === 'SUSPENDED' ? waitingOn : [], error: status.error ?? null };
  }

  /**
   * Stops `execution` once the store's clock passes the run's deadline: checked again when the
   * timer fires (a process timer is not the database clock), and given up when the execution ends.
   */
  private watchDeadline(execution: Execution, run: Run, inMs: number): void {
    const deadline = run.deadlineAt!;
    let timer: NodeJS.Timeout | null = null;
    const arm = (ms: number): void => {
      timer = setTimeout(() => void check(), Math.min(Math.max(ms, 1), 2_147_483_647));
      timer.unref();
    };
    const check = async (): Promise<void> => {
      if (execution.over) return;
      let left: number;
      try {
        left = deadline.getTime() - (await this.clock()).getTime();
      } catch {
        left = 1_000; // the clock is unreachable: the store is too; look again shortly (the sweeper is the guarantee)
      }
      if (left > 0) return arm(Math.max(left, 50));
      execution.stop('timed_out', new RunTimedOutError(run.id, deadline));
    };
    arm(inMs);
    void execution.whenEnded().then(() => {
      if (timer) clearTimeout(timer);
    });
  }

  /**
   * Fails a run that passed its deadline, under this engine's lease (the fast path; the sweeper does
   * the same without one), then cancels its unfinished children. A lost lease means someone else
   * (the sweeper) ended it first.
   */
  private async timeOut(lease: Lease, run: Run, log: Logger): Promise<ExecuteResult> {
    log.info({ deadline: run.deadlineAt }, 'run timed out: its deadline passed while executing here');
    const result = await this.end(lease, run, { status: 'FAILED', error: runTimedOutRecord(run) }, log);
    if (result.outcome === 'failed') {
      await runChildrenCancel(this.ender, { runId: run.id, namespace: run.namespace }, PARENT_TIMED_OUT_ENDING)
        .catch((err: unknown) => log.warn({ err }, 'could not cancel the children of a timed-out run; the sweeper will'));
    }
    return result;
  }

  private stopped(runId: string, error: unknown): ExecuteResult {
    const outcome: ExecuteOutcome = error instanceof LeaseLostError ? 'lease_lost' : 'aborted';
    if (error instanceof ExecutionAbortedError) this.logger.info({ runId, why: error.why }, 'execution stopped on this worker');
    else if (outcome === 'aborted') this.logger.error({ runId, err: error }, 'execution aborted by a store failure; the lease will expire and the sweeper recovers the run');
    return { runId, outcome, run: null, waitingOn: [], error };
  }

  /** ctx.child: creates the child once per attempt (idempotent by key), resolving at once if it already ended. */
  private childStarter(parent: Run): ChildStarter {
    return async ({ workflow, input, suspension, idempotencyKey }) => {
      const { run: child } = await this.store.runCreate({
        namespace: parent.namespace,
        workflowName: workflow.name,
        workflowVersion: workflow.version,
        workflowDigest: workflow.digest,
        input,
        idempotencyKey: `child:${idempotencyKey}:${suspension.seq}`,
        parentRunId: parent.id,
        parentSeq: suspension.seq,
        dryRun: parent.dryRun,
        // A child has its own deadline (its definition's timeout), not its parent's: when the parent
        // times out, its unfinished children are cancelled (runtime/run-ending.ts runTimeOut).
        timeoutMs: workflow.timeoutMs,
      });
      if (child.status !== 'SUCCEEDED' && child.status !== 'FAILED' && child.status !== 'CANCELLED') return null;
      const resolved = await this.childResolveParent({ child });
      return resolved ? resolved.winner : null;
    };
  }
}
