// runtime/: class RunDriver, executes runs under a lease: its rounds, its end, hand-back, deadline, children.
// Must not decide where a run executes (scheduling/ does) nor call a use case (run-engine.ts calls it).
import { EventEmitter } from 'node:events';
import { pino, type Logger } from 'pino';
import { PayloadTooLargeError, UnstorableValueError, WorkflowNotFoundError } from '../../journal/errors.js';
import type { Json, Lease, Run, RunError, RunStatus } from '../../journal/run.js';
import type { JournalEntry } from '../../journal/journal-entry.js';
import type { JournalStore, RunLeaseAcquireRunningResult, RunRouting, ServedWorkflow } from '../../store/store.js';
import { toJson } from '../replay/content-key.js';
import { errorRecord } from '../replay/error-codec.js';
import { ExecutionAbortedError, InvalidInputError, InvalidOutputError } from '../errors.js';
import { zodViolations } from '../replay/payload-schema.js';
import type { Registry } from '../registry.js';
import type { Workflow } from '../author/workflow.js';
import { FlowCatalog } from '../flow/flow-catalog.js';
import { flowMcpTools } from './mcp-flow-tools.js';
import { Execution, type ExecutionEnd } from './execution.js';
import { PARENT_TIMED_OUT_ENDING, runChildrenCancel, runTimedOutRecord, type RunEnder } from './run-ending.js';
import * as resolutions from './resolutions.js';
import { waitingOf, type Waiting } from './suspension.js';
import { deadlineWatch } from './deadline-watch.js';
import { chooseDefinition, type DefinitionChoice } from './definition-choice.js';
import { executionStopped, type ExecuteOutcome, type ExecuteResult, type ExecutionEvents, type LeasedStart } from './execute-result.js';
import { WorkflowContextImpl } from './workflow-context.js';
import { childStarter } from './child-start.js';
import { ContinueAsNewRequest, continueAsNewEnd } from './continue-as-new.js';
import { RemoteCalls, type RemoteCallsOptions } from './remote-calls.js';
import type { McpConnector } from './mcp-connector.js';
import type { EffectTracer } from './effect-tracer.js';
import { JOURNAL_PAGE_SIZE, journalReadAll } from './journal-read.js';
import { ResumeCache, type ResumeCacheOptions } from './resume-cache.js';

export interface RunDriverOptions {
  store: JournalStore;
  registry: Registry;
  /** This worker's id, recorded as the lease holder. */
  holder: string;
  leaseTtlMs: number;
  logger?: Logger;
  /** The clock ctx.now() and deadlines read; default the store's (database) clock. */
  clock?: () => Date | Promise<Date>;
  renewEveryMs?: number; // default a third of leaseTtlMs
  /** Remote tools (docs/workers.md): declaration cache and poll interval. */
  remote?: RemoteCallsOptions;
  /** MCP servers (docs/mcp.md): src/mcp's connector; absent: runs cannot call MCP tools. */
  mcp?: McpConnector;
  /** Spans per live effect attempt and remote task (effect-tracer.ts, docs/tracing.md); absent: tracing is off. */
  tracer?: EffectTracer;
  /** Entries per read when an execution reads its journal to replay it; default JOURNAL_PAGE_SIZE (5,000). */
  journalPageSize?: number;
  /** Hot resume (runtime/resume-cache.ts): how many journal entries of parked runs this process keeps. */
  resumeCache?: ResumeCacheOptions;
}

/** A resolution arriving while a run parks makes it PENDING; continuing here saves a queue hop, a few times at most. */
const MAX_ROUNDS = 8;

/**
 * The run driver: what happens to a run while this process holds its lease. The use cases
 * (run-engine.ts) hand it a lease they took (StartRun with wait, ResumeRun); the scheduler
 * (scheduling/) one it claimed or one a resolution came with. It executes rounds until the run ends
 * or parks, writes the end, wakes the parent, watches the deadline and starts children, and never
 * calls back into the use cases: an RPC enters those once (docs/architecture.md "Three walks").
 */
export class RunDriver {
  readonly store: JournalStore;
  readonly registry: Registry;
  readonly holder: string;
  readonly leaseTtlMs: number;
  readonly events = new EventEmitter<ExecutionEvents>();
  /** The declarative flows of the store (flow/flow-catalog.ts): every replica serves them. */
  readonly flows: FlowCatalog;
  /** Remote tools: what ctx.tool reads of their declarations and how calls become tasks (docs/workers.md). */
  readonly remote: RemoteCalls;
  /** MCP servers (docs/mcp.md); null: runs cannot call MCP tools. */
  readonly mcp: McpConnector | null;
  readonly tracer: EffectTracer | null;
  /** The journals of runs that parked here (docs/recovery.md "Hot resume"): their next execution here reads none of it again. */
  readonly resumes: ResumeCache;
  readonly logger: Logger;
  /** The clock ctx.now() and deadlines read. */
  readonly clock: () => Promise<Date>;
  private readonly renewEveryMs: number;
  private readonly journalPageSize: number;
  /** Live executions of this process, from start until nothing of them is in flight (Execution.quiet). */
  private readonly executing = new Map<string, Execution>();
  /** Runs executionsAbort named before their execution existed: it stops before it starts. */
  private readonly abortRequested = new Set<string>();
  private served: ServedWorkflow[] | null = null;

  constructor(options: RunDriverOptions) {
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
    if (!(Number.isInteger(this.journalPageSize) && this.journalPageSize > 0)) throw new RangeError(`journalPageSize must be a positive integer, got ${this.journalPageSize}`);
    this.mcp = options.mcp ?? null;
    this.tracer = options.tracer ?? null;
    this.flows = new FlowCatalog(this.store, this.registry, (namespace, flow) => flowMcpTools({ store: this.store, mcp: this.mcp, namespace, flow }));
    this.remote = new RemoteCalls(options.store, options.remote);
    this.resumes = new ResumeCache(options.resumeCache);
  }

  /**
   * The definitions this replica serves (routing): what its heartbeat records and its claims ask
   * for. Computed once; the registry does not change after start.
   */
  serves(): ServedWorkflow[] {
    this.served ??= this.registry.workflows().map((w) => ({ name: w.name, version: w.version, digest: w.digest, drift: w.drift, description: w.description, inputSchema: w.inputSchema, timeoutMs: w.timeoutMs }));
    return this.served;
  }

  /**
   * The routing of this replica's takes (RunRouting): a run another replica must execute (it serves
   * the run's pinned digest, or the workflow at all, and this one does not) is not taken here, so it
   * is never journaled RUNNING here only to be handed back; it stays PENDING for that replica's claim.
   */
  routing(): RunRouting {
    return { serves: this.serves(), flows: true };
  }

  /**
   * Executes a run under `lease` (from runClaim), under the lease a resolution came with (`taken`),
   * or takes the lease of `runId` first (null when someone else holds it). Reads the journal only
   * after the lease is committed.
   */
  async execute(params: { lease: Lease } | { taken: RunLeaseAcquireRunningResult } | { runId: string; namespace?: string }): Promise<ExecuteResult | null> {
    if ('lease' in params) return this.executeLeased({ lease: params.lease });
    if ('taken' in params) return this.executeLeased(params.taken);
    // The lease and the RUNNING entry in one statement (the execution then writes no RUNNING itself).
    const taken = await this.store.runLeaseAcquireRunning({
      runId: params.runId, holder: this.holder, ttlMs: this.leaseTtlMs, ...(params.namespace ? { namespace: params.namespace } : {}),
      routing: this.routing(),
    });
    return taken ? this.executeLeased(taken) : null;
  }

  /**
   * Claims and executes PENDING runs until none is left (or `maxRuns` executions): what an executor
   * loop does on each wake-up, and how tests drive children and resolved runs.
   */
  async executePending(params: { limit?: number; namespace?: string; maxRuns?: number } = {}): Promise<ExecuteResult[]> {
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

  /** For whoever ends a child run (and the sweeper): closes the parent's `child` wait. */
  async childResolveParent(params: { child: Run }): Promise<resolutions.ResolveResult | null> {
    const result = await resolutions.childResolveParent(this.store, params.child, this.logger);
    this.resumes.note(result?.entry);
    return result;
  }

  /** How this process ends runs from outside their execution (cancel, run timeout): as its own holder, closing open waits. */
  get ender(): RunEnder {
    return { store: this.store, holder: this.holder, leaseTtlMs: this.leaseTtlMs, logger: this.logger, closeWaits: true };
  }

  /** Executes under a lease; if parking found a resolution already waiting, takes the run again here. */
  async executeLeased(first: LeasedStart): Promise<ExecuteResult> {
    let start = first;
    for (let round = 1; ; round++) {
      const { lease } = start;
      this.events.emit('lease-acquired', { runId: lease.runId, lease });
      const result = await (this.tracer ? this.tracer.attemptWithin(lease.runId, () => this.executeOnce(start)) : this.executeOnce(start));
      this.events.emit('execution-ended', result);
      if (result.outcome !== 'pending' || result.handedBack || round >= MAX_ROUNDS) return result;
      const again = await this.store.runLeaseAcquireRunning({
        runId: lease.runId, holder: this.holder, ttlMs: this.leaseTtlMs, statuses: ['PENDING'], routing: this.routing(),
      });
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
        return executionStopped(runId, error, this.logger);
      }
    }
    // run_id: the name trace tools key log lines on (docs/tracing.md "Logs").
    const log = this.logger.child({ runId, run_id: runId, workflow: run.workflowName });
    let choice: DefinitionChoice;
    try {
      choice = await chooseDefinition({ store: this.store, run, lease, log, definitionOf: (r) => this.definitionOf(r) });
    } catch (error) {
      return executionStopped(runId, error, this.logger);
    }
    if (choice.kind === 'hand-back') return this.handBack(lease, run, log, choice.why);
    if (choice.kind === 'fail') return this.end(lease, run, { status: 'FAILED', error: errorRecord(choice.error) }, log);
    const { workflow, drifted } = choice;
    run = choice.run;
    let deadlineIn: number | null = null;
    if (run.deadlineAt !== null) {
      try {
        deadlineIn = run.deadlineAt.getTime() - (await this.clock()).getTime();
      } catch (error) {
        return executionStopped(runId, error, this.logger);
      }
      // Claimed (or resumed) past its deadline before the sweeper failed it: it fails here, unexecuted.
      if (deadlineIn <= 0) return this.timeOut(lease, run, log);
    }
    let entries: JournalEntry[] = [];
    try {
      // A run created here holds only its RUNNING entry, which replay skips: no read needed. A
      // drifted one reads all of it (its drift entry came after RUNNING; nothing kept here is current).
      if (drifted) entries = await journalReadAll(this.store, runId, this.journalPageSize);
      else if (running) entries = await this.journalOf(lease, workflow, running);
    } catch (error) {
      return executionStopped(runId, error, this.logger);
    }
    if (this.abortRequested.delete(runId)) return executionStopped(runId, new ExecutionAbortedError(runId, 'stopped before it started'), this.logger);
    const execution = new Execution({
      run, entries, mode: 'live', store: this.store, lease, leaseTtlMs: this.leaseTtlMs, renewEveryMs: this.renewEveryMs,
      now: this.clock, logger: log, onLeaseRenewed: (renewed) => this.events.emit('lease-renewed', { runId, lease: renewed }),
      remote: this.remote, mcp: this.mcp, tracer: this.tracer,
    });
    this.executing.set(runId, execution);
    const forget = (): void => {
      if (this.executing.get(runId) === execution) this.executing.delete(runId);
    };
    const ctx = new WorkflowContextImpl(execution, this.registry, childStarter({ store: this.store, parent: run, resolveParent: (child) => this.childResolveParent({ child }) }));
    // The in-process fast path of the run timeout: at the deadline this replica stops the execution
    // (in-flight effects see their AbortSignal fire with RunTimedOutError) and fails the run itself.
    // The sweeper is the guarantee: the deadline is in the run row, this timer only saves the wait.
    if (deadlineIn !== null) deadlineWatch({ execution, run, inMs: deadlineIn, clock: this.clock });
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
        return executionStopped(run.id, end.error, this.logger);
      case 'blocked': {
        // What it parks with stays here for its next execution (hot resume), read or written alike.
        const result = await this.end(lease, run, { status: 'SUSPENDED' }, log, end.parked.map(waitingOf), (entry, after) => {
          this.resumes.park(run.id, { known: [...execution.known(), entry], epoch: lease.epoch, digest: workflow.digest, payloadBytes: after.journalBytes, waits: end.parked });
        });
        // The replica's due timers (scheduling/due-timers.ts) hold the deadlines among these waits.
        if (result.outcome === 'suspended') this.events.emit('parked', { runId: run.id, namespace: run.namespace, waits: end.parked });
        return result;
      }
      case 'threw': {
        const fail = (error: unknown) => this.end(lease, run, { status: 'FAILED', error: errorRecord(error) }, log);
        return end.error instanceof ContinueAsNewRequest ? continueAsNewEnd({ store: this.store, lease, run, workflow, request: end.error, log, fail }) : fail(end.error);
      }
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
  async definitionOf(run: Run): Promise<Workflow> {
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
      return executionStopped(run.id, error, this.logger);
    }
    log.info({ digest: run.workflowDigest }, `run handed back for another replica: ${why}`);
    return { runId: run.id, outcome: 'pending', run: { ...run, status: 'PENDING', leaseHolder: null, leaseExpiresAt: null }, waitingOn: [], error: null, handedBack: true };
  }

  /** Writes the run's new status; a terminal one also closes the parent's wait on it. */
  private async end(
    lease: Lease, run: Run, status: { status: RunStatus; output?: Json; error?: RunError }, log: Logger, waitingOn: Waiting[] = [],
    parked?: (entry: JournalEntry, after: Run) => void,
  ): Promise<ExecuteResult> {
    let after: Run;
    try {
      let entry: JournalEntry;
      ({ run: after, entry } = await this.store.runStatusSet({ lease, ...status }));
      if (parked && (after.status === 'SUSPENDED' || after.status === 'PENDING')) parked(entry, after);
    } catch (error) {
      if (!(error instanceof PayloadTooLargeError || error instanceof UnstorableValueError) || status.status === 'FAILED') return executionStopped(run.id, error, this.logger);
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
}
