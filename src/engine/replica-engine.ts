// engine/: class ReplicaEngine, one replica's engine as its RPCs call it: one method per RPC, each the whole use case.
// Must not know the wire (protos, gRPC codes): server/ converts; it only composes RunEngine, read/ and scheduling/.
import type { Logger } from 'pino';
import type { JournalEntry } from '../journal/journal-entry.js';
import type { Run } from '../journal/run.js';
import type { ApprovalDecideParams, ResolveResult } from './runtime/resolutions.js';
import { approvalGet, type ApprovalView } from './read/approvals.js';
import type { RunEngine, RunStartParams } from './run-engine.js';
import { runWaits } from './read/run-waits.js';
import { runCompare, type RunComparison } from './read/run-compare.js';
import { approvalPage } from './read/approval-page.js';
import { journalPage } from './read/journal-page.js';
import { agentsOf, runProvenance, type RunProvenance } from './read/run-provenance.js';
import { runEvents, runEventsWithDeltas, runSettled } from './read/run-events.js';
import type { FollowItem } from '../store/run-follow.js';
import { runWait, waitReached, type WaitFor } from './read/run-wait.js';
import { runPage, runView, type RunPageParams, type RunView } from './read/run-view.js';
import type { ReplayPreview } from './runtime/resume-preview.js';
import type { ForkPreview, RunForkParams } from './runtime/run-fork.js';
import { InlineExecutions } from './scheduling/inline-executions.js';
import { ApiKeys } from './access/api-keys.js';
import { RunNotFoundError } from '../journal/errors.js';
import { isRunId } from '../store/run-id.js';
import type { SignalSendParams, SignalSendResult } from './runtime/signal-inbox.js';
import type { Waiting } from './runtime/suspension.js';
import type { FlowRecord, McpServerPutParams, McpServerPutResult, McpServerRecord, RemoteTask, ServedWorkflow } from '../store/store.js';
import type { McpServerHealth } from './runtime/mcp-connector.js';
import { McpServerNotFoundError } from './errors.js';
import type { FlowDefinition } from './flow/flow-definition.js';
import { WorkerTasks, type ServedToolView, type TaskCompleteResult } from './runtime/worker-tasks.js';
import { runPurge, type RunPurgeFilter, type RunPurgeSummary } from './run-purge.js';
import { Schedules } from './schedules/schedules.js';

/*
 * One replica's engine as its RPCs call it: one method per RPC, each the whole use case, so a
 * handler validates, converts, makes one call and converts the answer (docs/architecture.md).
 * Writes go to the RunEngine (the use cases every replica shares), once per call; a run a call
 * made runnable executes here at once through the RunDriver (scheduling/inline-executions.ts
 * makes that decision, in one place); reads go to read/ (views, waits, approvals, spend,
 * provenance, journal pages, streams, page tokens). Unlike the RunEngine it holds this replica's
 * state (its inline executions, key cache, worker tasks): the composition root builds one per
 * replica and stops it on shutdown, after the executor.
 */

export interface ReplicaEngineOptions {
  engine: RunEngine;
  logger: Logger;
  /** How long executions aborted on shutdown get to settle (WAYMARK_SHUTDOWN_SETTLE_MS); default 2 s. */
  settleMs?: number;
  /** Fallback poll of a stream following a run when no wake-up arrives. Default 1000 ms. */
  followPollMs?: number;
  /** How long a verified API key is trusted without reading it again (WAYMARK_AUTH_CACHE_MS); default 5 s. */
  keyCacheMs?: number;
}

/** When a waiting StartRun answers, `deadlineMs` being its call's deadline: a tenth (at most a second) before it, in whole ms. */
export function answerInMs(deadlineMs: number): number {
  return Math.min(2 ** 31 - 1, Math.max(0, Math.floor(deadlineMs - Math.min(1000, deadlineMs / 10))));
}

export class ReplicaEngine {
  readonly engine: RunEngine;
  readonly inline: InlineExecutions;
  /** API keys: AdminService's create, list and revoke, and every authenticated call's verify. */
  readonly keys: ApiKeys;
  /** WorkerService's use cases: remote tools' workers, their tasks and results (docs/workers.md). */
  readonly workers: WorkerTasks;
  /** ScheduleService's use cases (schedules/schedules.ts): each route makes one call to it; the sweeper starts the runs. */
  readonly schedules: Schedules;
  readonly #followPollMs: number | undefined;

  constructor(options: ReplicaEngineOptions) {
    this.engine = options.engine;
    this.keys = new ApiKeys({ store: options.engine.store, ...(options.keyCacheMs !== undefined ? { cacheMs: options.keyCacheMs } : {}) });
    this.inline = new InlineExecutions({ driver: options.engine.driver, logger: options.logger, ...(options.settleMs !== undefined ? { settleMs: options.settleMs } : {}) });
    this.#followPollMs = options.followPollMs;
    this.workers = new WorkerTasks(options.engine.store, options.engine.registry, options.engine.remote, options.engine.driver.tracer);
    this.schedules = new Schedules({ store: options.engine.store, runs: options.engine });
  }

  /**
   * StartRun: creates the run (a repeated idempotency key returns the first one) and, with `wait`,
   * executes it here until it ends or parks; a repeated key with `wait` waits for the first call's
   * run wherever it executes. With `waitFor` it waits until the run reaches that point, following
   * it through the parks it goes through (read/run-wait.ts), and answers the run as it stands a
   * little before `deadlineMs` (the call's deadline) when that comes first.
   * `signal`: the caller went away (only the waiting stops).
   */
  async runStart(
    params: Omit<RunStartParams, 'execute' | 'parentRunId' | 'parentSeq' | 'onCreated'> & { wait: boolean; waitFor?: WaitFor; deadlineMs?: number },
    signal: AbortSignal,
  ): Promise<{ run: Run; created: boolean; waitingOn: Waiting[]; waitComplete: boolean }> {
    const { wait, waitFor, deadlineMs, ...start } = params;
    if (waitFor !== undefined) return this.#runStartWaiting(start, waitFor, deadlineMs, signal);
    const store = this.engine.store;
    const result = await this.inline.track(() => this.engine.runStart({ ...start, execute: wait }));
    // An execution stopped by a lost lease or a store failure reports no run: read where it stands.
    let run = result.execution ? (result.execution.run ?? await store.runGet({ runId: result.run.id, namespace: params.namespace })) : result.run;
    if (!result.created && wait) run = await runSettled({ store, run, signal, ...this.#poll() });
    return { run, created: result.created, waitingOn: await this.#waits(run), waitComplete: wait && waitReached('first_park', run, []) };
  }

  /**
   * StartRun with `waitFor`: the first round executes here as with `wait`, then the wait follows
   * the run wherever it continues; at `deadlineMs` less a margin (a tenth, at most a second) the
   * answer is the run as it stands, which goes on (docs/api.md "Waiting for a run").
   */
  async #runStartWaiting(
    start: Omit<RunStartParams, 'execute' | 'parentRunId' | 'parentSeq' | 'onCreated'>, waitFor: WaitFor, deadlineMs: number | undefined, signal: AbortSignal,
  ): Promise<{ run: Run; created: boolean; waitingOn: Waiting[]; waitComplete: boolean }> {
    const store = this.engine.store;
    const stop = deadlineMs === undefined ? signal : AbortSignal.any([signal, AbortSignal.timeout(answerInMs(deadlineMs))]);
    let exists: (run: Run, created: boolean) => void = () => undefined;
    const creation = new Promise<{ run: Run; created: boolean }>((resolve) => (exists = (run, created) => resolve({ run, created })));
    const started = this.inline.track(() => this.engine.runStart({ ...start, execute: true, onCreated: exists }));
    const stopped = new Promise<null>((resolve) => {
      if (stop.aborted) resolve(null);
      else stop.addEventListener('abort', () => resolve(null), { once: true });
    });
    let run: Run;
    let isNew: boolean;
    const first = await Promise.race([started, stopped]);
    if (first === null) {
      // The deadline came during the first round (or before the run existed): the run as it
      // stands, which executes on here. A refused start still fails the call.
      ({ run, created: isNew } = await Promise.race([creation, started]));
      run = await store.runGet({ runId: run.id, namespace: run.namespace });
    } else {
      isNew = first.created;
      // An execution stopped by a lost lease or a store failure reports no run: read where it stands.
      run = first.execution ? (first.execution.run ?? await store.runGet({ runId: first.run.id, namespace: start.namespace })) : first.run;
    }
    const answer = await runWait({ store, remote: this.engine.remote, mcp: this.engine.driver.mcp, run, waitFor, signal: stop, ...this.#poll() });
    return { run: answer.run, created: isNew, waitingOn: answer.waitingOn, waitComplete: answer.reached };
  }

  /** GetRun: the run, the spend its budget counts, what it waits on, and the runs forked from it (newest 100). */
  async runGet(params: { runId: string; namespace: string }): Promise<RunView & { waitingOn: Waiting[]; forks: string[] }> {
    const view = await runView(this.engine.store, params);
    const [waitingOn, forks] = await Promise.all([this.#waits(view.run), this.engine.store.runForks({ ...params, limit: 100 })]);
    return { ...view, waitingOn, forks };
  }

  /** CompareRuns (read/run-compare.ts): two runs of one workflow, effect by effect. */
  runCompare(params: { namespace: string; runIdA: string; runIdB: string }): Promise<RunComparison> {
    return runCompare(this.engine.store, params);
  }

  /**
   * Whether run `runId` exists in `namespace`: what the auth layer reads, only when refusing a call
   * for a missing scope, so another namespace's run is NOT_FOUND rather than PERMISSION_DENIED.
   */
  async runVisible(params: { runId: string; namespace: string }): Promise<boolean> {
    if (!isRunId(params.runId)) return false;
    try {
      await this.engine.store.runGet(params);
      return true;
    } catch (err) {
      if (err instanceof RunNotFoundError) return false;
      throw err;
    }
  }

  /** ListRuns (read/run-view.ts). */
  runList(params: RunPageParams): Promise<{ runs: RunView[]; nextPageToken: string }> {
    return runPage(this.engine.store, params);
  }

  /** GetJournal (read/journal-page.ts). */
  journalPage(params: { runId: string; namespace: string; afterSeq: number; pageSize: number; pageToken: string; includeLargePayloads?: boolean }): Promise<{ entries: JournalEntry[]; nextPageToken: string }> {
    return journalPage(this.engine.store, params);
  }

  /** StreamRunEvents: the entries after `afterSeq`, live, ending after the one that settles the run (read/run-events.ts). */
  runEvents(params: { runId: string; namespace: string; afterSeq: number; followSuspended: boolean; signal: AbortSignal; largePayloads?: boolean }): AsyncGenerator<JournalEntry, void, undefined> {
    return runEvents({ store: this.engine.store, ...params, ...this.#poll() });
  }

  /** StreamRunEvents with `include_deltas`: entries and model call deltas (read/run-events.ts). */
  runEventsWithDeltas(params: { runId: string; namespace: string; afterSeq: number; afterOffset: number; followSuspended: boolean; signal: AbortSignal; largePayloads?: boolean }): AsyncGenerator<FollowItem, void, undefined> {
    return runEventsWithDeltas({ store: this.engine.store, ...params, ...this.#poll() });
  }

  /** GetRunProvenance: agents as the registry's agent runtime reads them (read/run-provenance.ts). */
  runProvenance(params: { runId: string; namespace: string }): Promise<RunProvenance> {
    return runProvenance({ store: this.engine.store, ...params, agents: agentsOf(this.engine.registry.agentRuntime) });
  }

  /** ResumeRun with dry_run: the replay-strict preview, then the run as it stands. */
  async runPreview(params: { runId: string; namespace: string; invalidate: number[] }): Promise<{ run: Run; preview: ReplayPreview }> {
    const preview = await this.engine.runPreview(params);
    return { run: await this.engine.store.runGet({ runId: params.runId, namespace: params.namespace }), preview };
  }

  /**
   * ResumeRun: the run becomes PENDING and then executes here in the background (the answer does
   * not wait for it); a drift restart executes the new run here before answering, like StartRun with wait.
   */
  async runResume(params: { runId: string; namespace: string; invalidate: number[]; drift?: 'restart' | 'abandon' }): Promise<{ run: Run; restartedAs: Run | null }> {
    const resumed = await this.inline.track(() => this.engine.runResume({ ...params, execute: false }));
    this.inline.resolved(resumed, params.namespace);
    return { run: resumed.run, restartedAs: resumed.restartedAs ? (resumed.execution?.run ?? resumed.restartedAs) : null };
  }

  /** ForkRun with dry_run: what the fork would keep, redo and cost (runtime/run-fork.ts); nothing is written. */
  runForkPreview(params: RunForkParams): Promise<ForkPreview> {
    return this.engine.runForkPreview(params);
  }

  /**
   * ForkRun (docs/forks.md): creates the fork and, with `wait`, executes it here until it ends or
   * parks (as StartRun with wait); without, it executes here in the background, or on any executor.
   */
  async runFork(params: RunForkParams & { wait: boolean }): Promise<{ run: Run; created: boolean; forkSeq: number; waitingOn: Waiting[] }> {
    const { wait, ...fork } = params;
    const result = await this.inline.track(() => this.engine.runFork({ ...fork, execute: wait && this.inline.accepting }));
    this.inline.resolved(result, params.namespace);
    const run = result.execution && !result.execution.run ? await this.engine.store.runGet({ runId: result.runId, namespace: params.namespace }) : result.run;
    return { run, created: result.created, forkSeq: result.forkSeq, waitingOn: await this.#waits(run) };
  }

  /** CancelRun: the run and its unfinished children. */
  async runCancel(params: { runId: string; namespace: string; reason?: string }): Promise<{ run: Run }> {
    const { run } = await this.engine.runCancel(params);
    return { run };
  }

  /** PurgeRuns (run-purge.ts): finished runs matching the filter deleted in short batches, or with dryRun counted. */
  runPurge(filter: RunPurgeFilter): Promise<RunPurgeSummary> {
    return runPurge(this.engine.store, filter);
  }

  /** ListWorkflows: what the store's live replicas serve, one entry per name and digest (routing). */
  workflows(params: { namespace: string }): Promise<{ workflow: ServedWorkflow; replicas: string[] }[]> {
    return this.engine.workflowsServed(params);
  }

  /** RegisterFlow: validate (InvalidFlowError, nothing stored), then store the next version or return the same one. */
  flowRegister(params: { namespace: string; flow: FlowDefinition }): Promise<{ flow: FlowRecord; created: boolean }> {
    return this.engine.flows.register(params);
  }

  /** GetFlow: one version, the latest by default. */
  flowGet(params: { namespace: string; name: string; version?: number }): Promise<FlowRecord> {
    return this.engine.flows.get(params);
  }

  /** ListFlows: the latest version of each flow of the namespace. */
  flowList(params: { namespace: string }): Promise<FlowRecord[]> {
    return this.engine.flows.list(params);
  }

  /** PutMcpServer: creates or replaces a registration (docs/mcp.md); runs that pinned its tools keep their pin. */
  mcpServerPut(params: McpServerPutParams): Promise<McpServerPutResult> {
    return this.engine.store.mcpServerPut(params);
  }

  /** ListMcpServers: the namespace's registrations, by name, each with this replica's view of its connection (null: not tried). */
  async mcpServerList(params: { namespace: string }): Promise<(McpServerRecord & { health: McpServerHealth | null })[]> {
    const mcp = this.engine.driver.mcp;
    return (await this.engine.store.mcpServerList(params)).map((s) => ({ ...s, health: mcp?.health(s.namespace, s.name) ?? null }));
  }

  /** RemoveMcpServer: McpServerNotFoundError when there is none of that name. */
  async mcpServerRemove(params: { namespace: string; name: string }): Promise<void> {
    if (!(await this.engine.store.mcpServerRemove(params))) throw new McpServerNotFoundError(params.name);
  }

  /** SendSignal: resolves the oldest open wait of the name, or buffers; a run it made runnable executes here. */
  async signalSend(params: SignalSendParams): Promise<SignalSendResult> {
    // The lease comes with the delivery (no PENDING hop, no other replica racing for the claim).
    const result = await this.engine.signalSend(params, { take: this.inline.accepting });
    this.inline.resolved(result, params.namespace);
    return result;
  }

  /** ListApprovals (read/approval-page.ts). */
  approvalList(params: Parameters<typeof approvalPage>[1]): Promise<{ approvals: ApprovalView[]; nextPageToken: string }> {
    return approvalPage(this.engine.store, params);
  }

  /** GetApproval. */
  approvalGet(params: { namespace: string; approvalId: string }): Promise<ApprovalView> {
    return approvalGet(this.engine.store, params);
  }

  /** DecideApproval: the decision (a run it made runnable executes here) and the approval as it now stands. */
  async approvalDecide(params: ApprovalDecideParams & { approvalId: string }): Promise<ResolveResult & { approval: ApprovalView }> {
    // The lease comes with the decision, as with a signal (no PENDING hop, no other replica racing for the claim).
    const result = await this.engine.approvalDecide(params, { take: this.inline.accepting });
    this.inline.resolved(result, params.namespace);
    return { ...result, approval: await approvalGet(this.engine.store, { namespace: params.namespace, approvalId: params.approvalId }) };
  }

  /** RegisterWorker: the worker's tools, validated and declared. */
  workerRegister(params: Parameters<WorkerTasks['register']>[0]): Promise<{ workerId: string }> {
    return this.workers.register(params);
  }

  /** PollTask: a task of the worker's tools, claimed under a new fencing token, or null after the wait. */
  taskPoll(params: Parameters<WorkerTasks['poll']>[0]): Promise<RemoteTask | null> {
    return this.workers.poll(params);
  }

  /** Heartbeat: the claim extended; TaskLostError when the worker no longer holds the task. */
  taskHeartbeat(params: Parameters<WorkerTasks['heartbeat']>[0]): Promise<RemoteTask> {
    return this.workers.heartbeat(params);
  }

  /** CompleteTask: the result journaled (fenced); a run it made runnable executes here. */
  async taskComplete(params: Parameters<WorkerTasks['complete']>[0]): Promise<TaskCompleteResult> {
    const result = await this.workers.complete(params);
    if (result.runnable) this.inline.resolved(result.runnable, params.namespace);
    return result;
  }

  /** ListTools: remote tools with their live workers, and the in-process tools. */
  toolList(params: { namespace: string }): Promise<ServedToolView[]> {
    return this.workers.tools(params);
  }

  /** On shutdown, after the server drained: the inline executions' drain (scheduling/drain.ts). */
  stop(options: { graceMs: number }): Promise<{ released: string[]; unsettled: string[] }> {
    return this.inline.stop(options);
  }

  #waits(run: Run): Promise<Waiting[]> {
    return run.status === 'SUSPENDED' ? runWaits({ store: this.engine.store, remote: this.engine.remote, mcp: this.engine.driver.mcp }, { runId: run.id, namespace: run.namespace }) : Promise.resolve([]);
  }

  #poll(): { pollMs?: number } {
    return this.#followPollMs !== undefined ? { pollMs: this.#followPollMs } : {};
  }
}
