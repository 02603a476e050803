// engine/: class RunEngine, the use cases on runs (start, resume, cancel, signal, decide, preview) over a JournalStore.
// Must not know the transport, a store implementation or where a run executes: the driver executes, scheduling/ decides.
import type { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { RunStateError, WorkflowNotFoundError } from '../journal/errors.js';
import type { Json, Run, RunStatus } from '../journal/run.js';
import { FORK_LABELS } from '../journal/fork-labels.js';
import type { JournalStore, ServedWorkflow } from '../store/store.js';
import { schemaHash, toJson } from './replay/content-key.js';
import { FlowDriftError, InvalidInputError } from './errors.js';
import { validatePinned, zodViolations } from './replay/payload-schema.js';
import type { Registry } from './registry.js';
import { JournalIndex } from './replay/replay.js';
import { invalidationEntries } from './replay/invalidation.js';
import { runChildrenCancel, runEnd, type RunEnding } from './runtime/run-ending.js';
import * as resolutions from './runtime/resolutions.js';
import { signalSend, type SignalSendParams, type SignalSendResult } from './runtime/signal-inbox.js';
import { replayHistory, type ReplayPreview } from './runtime/resume-preview.js';
import { forkCreate, forkDraft, forkPreview, type ForkPreview, type RunForkParams } from './runtime/run-fork.js';
import type { Waiting } from './runtime/suspension.js';
import type { FlowCatalog } from './flow/flow-catalog.js';
import type { RemoteCalls } from './runtime/remote-calls.js';
import type { ResumeCache } from './runtime/resume-cache.js';
import { RunDriver, type RunDriverOptions } from './runtime/run-driver.js';
import type { ExecuteResult, ExecutionEvents } from './runtime/execute-result.js';
import { approvalGet, type ApprovalView } from './read/approvals.js';
import { runWaits } from './read/run-waits.js';

/** What a RunEngine is built from: the store, the definitions, this process's lease holder id, and the driver's tuning. */
export type RunEngineOptions = RunDriverOptions;

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
  /** Told the run once it exists, before it executes (StartRun's wait answers it at the call's deadline). */
  onCreated?: (run: Run, created: boolean) => void;
}

/** What a run started now pins, and the check of its input (RunEngine.runDefinition). */
export interface RunDefinition {
  name: string;
  version: string;
  digest: string;
  /** The definition's run timeout; null: none. */
  timeoutMs: number | null;
  /** This replica executes it (its registry, or a flow). */
  local: boolean;
  /** The input as JSON once it passes the definition's schema; InvalidInputError otherwise. */
  checkInput(input: unknown): Json;
}

/** Statuses a resume may take a run from (a RUNNING one only once its lease expired). */
const RESUMABLE: RunStatus[] = ['PENDING', 'RUNNING', 'SUSPENDED', 'FAILED', 'CANCELLED', 'SUCCEEDED'];

/**
 * The use cases on runs over a JournalStore (docs/journal.md): starts, previews, resumes and cancels
 * runs, applies signals, approval decisions and deadlines, and hands every lease it takes to its
 * RunDriver (runtime/run-driver.ts), which executes. Stateless between calls; any number of
 * engines on any number of replicas may share one store. Embeddable (docs/workflows.md "Testing a
 * workflow"); a server wraps one in a ReplicaEngine (replica-engine.ts), which adds the read side,
 * inline scheduling and access.
 */
export class RunEngine {
  /** Executes runs under a lease; the scheduler (scheduling/) hands it the leases it claims. */
  readonly driver: RunDriver;
  readonly store: JournalStore;
  readonly registry: Registry;
  readonly holder: string;
  readonly leaseTtlMs: number;
  /** The driver's lease and execution events: the server turns them into metrics, tests await them. */
  readonly events: EventEmitter<ExecutionEvents>;
  /** The declarative flows of the store (flow/flow-catalog.ts): every replica serves them. */
  readonly flows: FlowCatalog;
  /** Remote tools: what ctx.tool reads of their declarations and how calls become tasks (docs/workers.md). */
  readonly remote: RemoteCalls;
  /** The journals of runs that parked here (docs/recovery.md "Hot resume"). */
  readonly resumes: ResumeCache;
  private readonly logger: Logger;

  constructor(options: RunEngineOptions) {
    this.driver = new RunDriver(options);
    ({ store: this.store, registry: this.registry, holder: this.holder, leaseTtlMs: this.leaseTtlMs, events: this.events } = this.driver);
    ({ flows: this.flows, remote: this.remote, resumes: this.resumes, logger: this.logger } = this.driver);
  }

  /**
   * Validates the input (InvalidInputError with field violations, nothing written), creates the
   * run (a repeated idempotency key returns the first run), and with `execute` drives it here until
   * it ends or parks.
   */
  async runStart(params: RunStartParams): Promise<{ run: Run; created: boolean; execution: ExecuteResult | null; waitingOn: Waiting[] }> {
    const workflow = await this.runDefinition(params.namespace, params.workflowName);
    const input = workflow.checkInput(params.input);
    const execute = params.execute === true && workflow.local;
    const { run, created, lease } = await this.store.runCreate({
      namespace: params.namespace,
      workflowName: workflow.name,
      workflowVersion: workflow.version,
      workflowDigest: workflow.digest,
      input,
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
    params.onCreated?.(run, created);
    if (!lease) return { run, created, execution: null, waitingOn: await this.runWaits({ runId: run.id, namespace: run.namespace }) };
    // Created with its RUNNING entry (recordRunning): the journal is that one entry, nothing to read.
    const execution = await this.driver.executeLeased({ lease, created: run });
    return { run: execution.run ?? run, created, execution, waitingOn: execution.waitingOn };
  }

  /**
   * What a run of `workflowName` started now pins: this replica's definition, the namespace's flow,
   * or (routing, docs/recovery.md "Routing") the newest definition a live replica serves, with the
   * check of an input against it (InvalidInputError, nothing written). WorkflowNotFoundError when
   * none has it. StartRun and a schedule's ticks (schedules/) both start runs from it.
   */
  async runDefinition(namespace: string, workflowName: string): Promise<RunDefinition> {
    // A declarative flow of the namespace is local to every replica (it lives in the store).
    const local = this.registry.has(workflowName) ? this.registry.workflow(workflowName) : await this.flows.workflowFor(namespace, workflowName);
    if (local) {
      return {
        name: local.name, version: local.version, digest: local.digest, timeoutMs: local.timeoutMs ?? null, local: true,
        checkInput: (input) => {
          const parsed = local.input.safeParse(input);
          if (!parsed.success) throw new InvalidInputError(`the input of workflow "${local.name}"`, zodViolations(parsed.error));
          return toJson(input, `the input of workflow "${local.name}"`);
        },
      };
    }
    const served = await this.servedElsewhere(workflowName);
    return {
      name: served.name, version: served.version, digest: served.digest, timeoutMs: served.timeoutMs ?? null, local: false,
      checkInput: (input) => {
        const json = toJson(input, `the input of workflow "${served.name}"`);
        const violations = served.inputSchema === null ? [] : validatePinned({ schema: served.inputSchema, schemaHash: schemaHash(served.inputSchema) }, json);
        if (violations.length > 0) throw new InvalidInputError(`the input of workflow "${served.name}"`, violations);
        return json;
      },
    };
  }

  /** The definitions this replica serves (routing): what its heartbeat records and its claims ask for. */
  serves(): ServedWorkflow[] {
    return this.driver.serves();
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

  /** Executes a run under a lease it was given or takes (RunDriver.execute); null when someone else holds it. */
  runExecute(params: Parameters<RunDriver['execute']>[0]): Promise<ExecuteResult | null> {
    return this.driver.execute(params);
  }

  /** Claims and executes PENDING runs until none is left (RunDriver.executePending): how tests drive children and resolved runs. */
  runExecutePending(params: { limit?: number; namespace?: string; maxRuns?: number } = {}): Promise<ExecuteResult[]> {
    return this.driver.executePending(params);
  }

  /** Resolves the oldest open wait of the signal's name, or buffers the signal for the next one (signal-inbox.ts). */
  async signalSend(params: SignalSendParams, options: { take?: boolean } = {}): Promise<SignalSendResult> {
    // A run parked here: the wait it parked on is the likely target, which saves the look-up (signal-inbox.ts).
    // `take`: the run's lease comes with the delivery when it makes the run runnable (the caller then
    // executes it with runExecute({ taken }), or releases it).
    const send = options.take ? { ...params, leaseFor: { holder: this.holder, ttlMs: this.leaseTtlMs, routing: this.driver.routing() } } : params;
    const result = await signalSend(this.store, send, this.resumes.openWait(params.runId, 'signal', params.name));
    this.resumes.note(result.entry);
    return result;
  }

  /**
   * DecideApproval (runtime/resolutions.ts). `take`: the run's lease comes with a decision that makes
   * it runnable, as with signalSend (the caller then executes it with the driver, or releases it).
   */
  async approvalDecide(params: resolutions.ApprovalDecideParams, options: { take?: boolean } = {}): Promise<resolutions.ResolveResult> {
    const leaseFor = options.take ? { leaseFor: { holder: this.holder, ttlMs: this.leaseTtlMs, routing: this.driver.routing() } } : {};
    const result = await resolutions.approvalDecide(this.store, params, leaseFor);
    this.resumes.note(result.entry);
    return result;
  }

  /** GetApproval (read/approvals.ts); ApprovalNotFoundError for an unknown id. */
  approvalGet(params: { namespace: string; approvalId: string }): Promise<ApprovalView> {
    return approvalGet(this.store, params);
  }

  /** For the sweeper: resolves due deadlines with their default decisions. */
  suspensionsResolveDue(params: { limit: number }): ReturnType<typeof resolutions.suspensionsResolveDue> {
    return resolutions.suspensionsResolveDue(this.store, { limit: params.limit, logger: this.logger });
  }

  /** For whoever ends a child run (and the sweeper): closes the parent's `child` wait (RunDriver.childResolveParent). */
  childResolveParent(params: { child: Run }): Promise<resolutions.ResolveResult | null> {
    return this.driver.childResolveParent(params);
  }

  /** What a run waits on now: its open suspensions (read/run-waits.ts). */
  runWaits(params: { runId: string; namespace: string }): Promise<Waiting[]> {
    return runWaits({ store: this.store, remote: this.remote, mcp: this.driver.mcp }, params);
  }

  /** ResumeRun with dry_run: a replay-strict pass with zero live calls and zero writes. */
  async runPreview(params: { runId: string; namespace: string; invalidate?: number[] }): Promise<ReplayPreview> {
    const run = await this.store.runGet({ runId: params.runId, namespace: params.namespace });
    const entries = await this.store.journalList({ runId: run.id, namespace: params.namespace });
    return replayHistory({
      run, entries, workflow: await this.driver.definitionOf(run), registry: this.registry, logger: this.logger, remote: this.remote,
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
    // A run failed by a drifted MCP tool (docs/mcp.md "Drift") takes the same recoveries as drifted code.
    if (params.drift && run.status === 'FAILED' && run.error?.name === 'McpToolDriftError') {
      return { ...(await this.recoverDrift(run, params.drift)), runId: run.id, runnable: false };
    }
    const workflow = await this.driver.definitionOf(run);
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
    const execution = await this.driver.executeLeased({ lease });
    return { run: execution.run ?? run, execution, restartedAs: null, runId: run.id, runnable: false };
  }

  /** ForkRun with dry_run (runtime/run-fork.ts): what the fork would keep, redo and cost; nothing is written. */
  async runForkPreview(params: RunForkParams): Promise<ForkPreview> {
    const draft = await forkDraft({ store: this.store, registry: this.registry, definitionOf: (r) => this.driver.definitionOf(r) }, params);
    return forkPreview(draft, { registry: this.registry, logger: this.logger, remote: this.remote });
  }

  /**
   * ForkRun (docs/forks.md): creates the fork with its source's entries up to the fork point, under
   * a lease, then executes it here (`execute`) or hands it to an executor (`runnable`). The source
   * is only read. A repeated idempotency key returns the first fork and executes nothing.
   */
  async runFork(params: RunForkParams & { execute?: boolean }): Promise<{ run: Run; created: boolean; forkSeq: number; execution: ExecuteResult | null; runId: string; runnable: boolean }> {
    const draft = await forkDraft({ store: this.store, registry: this.registry, definitionOf: (r) => this.driver.definitionOf(r) }, params);
    const { run, created, lease } = await forkCreate(this.store, draft, { namespace: params.namespace, idempotencyKey: params.idempotencyKey ?? null, holder: this.holder, ttlMs: this.leaseTtlMs });
    const forkSeq = Number(run.labels[FORK_LABELS.seq] ?? draft.plan.forkSeq);
    if (!lease) return { run, created, forkSeq, execution: null, runId: run.id, runnable: false };
    if (params.execute === false) {
      await this.store.runLeaseRelease({ lease });
      return { run: await this.store.runGet({ runId: run.id, namespace: params.namespace }), created, forkSeq, execution: null, runId: run.id, runnable: true };
    }
    const execution = await this.driver.executeLeased({ lease });
    return { run: execution.run ?? run, created, forkSeq, execution, runId: run.id, runnable: false };
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
    if (await runEnd(this.driver.ender, target, ending)) cancelled.push(params.runId);
    cancelled.push(...(await runChildrenCancel(this.driver.ender, target, ending)));
    return { run: await this.store.runGet(target), cancelled };
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

  /** Stops the executions of `runIds` in this process (RunDriver.executionsAbort). */
  executionsAbort(params: { runIds: Iterable<string>; why: string }): Map<string, Promise<void>> {
    return this.driver.executionsAbort(params);
  }
}
