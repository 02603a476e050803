import { fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { durationFromMs, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { Code, createClient, type CallOptions as ConnectCallOptions, type Client } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { randomUUID } from 'node:crypto';
import { alreadyResolved, ScheduleNotFound, Unavailable, WaymarkError, WrongState } from './errors.js';
import { followEvents } from './events.js';
import { tokensOf, type TokenEvent } from './tokens.js';
import { Health, HealthCheckResponse_ServingStatus as Serving } from './gen/grpc/health/v1/health_pb.js';
import {
  ApprovalState, EntryStatus, RunStatus, type Approval, type JournalEntry, type ResumePreview, type Run, type RunEvent, type Workflow,
} from './gen/waymark/v1/run_pb.js';
import { DriftRecovery, RunService, WaitFor, type CompareRunsResponse, type ForkPreview, type PurgeRunsResponse, type RunProvenance } from './gen/waymark/v1/run_service_pb.js';
import { SignalService, type SendSignalResponse } from './gen/waymark/v1/signal_service_pb.js';
import { AdminService, type ApiKey } from './gen/waymark/v1/admin_service_pb.js';
import { WorkerService } from './gen/waymark/v1/worker_service_pb.js';
import { FlowSchema, FlowService, type Flow, type FlowVersion } from './gen/waymark/v1/flow_service_pb.js';
import { McpService } from './gen/waymark/v1/mcp_service_pb.js';
import { ScheduleService, type Schedule } from './gen/waymark/v1/schedule_service_pb.js';
import {
  scheduleMessage, scheduleUpdate, toOverlapPolicy, type ScheduleDefinition, type ScheduleListOptions, type ScheduleServiceClient, type ScheduleStartOptions,
} from './schedules.js';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { isTerminal, toApprovalState, toDriftRecovery, toRunStatus, toWaitFor } from './names.js';
import type {
  ApprovalFilter, CallOptions, ClientOptions, Decision, EventsOptions, JournalOptions, ForkOptions, PurgeOptions, ReadyOptions, ResultOptions, ResumeOptions, RunFilter, TokensOptions,
  SignalOptions, StartOptions,
} from './options.js';
import { required, type DecisionResult, type ForkResult, type ResumeResult, type RunState, type StartRunResult } from './responses.js';
import { DEFAULT_RETRY, withRetries, type RetryMode, type RetryPolicy } from './retry.js';
import { RunCancelled, RunFailed } from './run-failed.js';
import { openConnection } from './environment.js';

/** The `reason` of a response whose resolution lost to another. */
const ALREADY_RESOLVED = 'already_resolved';
const DUPLICATE = 'duplicate';

export { DEFAULT_ADDRESS } from './options.js';

/**
 * A client for one Waymark server (or a load-balanced address of several). Methods throw the
 * typed errors of errors.ts and retry as docs/clients.md says. `runs` and `signals` are the
 * generated Connect clients, for anything not wrapped here.
 */
export class WaymarkClient {
  readonly runs: Client<typeof RunService>;
  readonly signals: Client<typeof SignalService>;
  readonly health: Client<typeof Health>;
  /** Declarative flows (FlowService); registering one needs an admin key. */
  readonly flows: Client<typeof FlowService>;
  /** API keys (AdminService): needs an admin key. */
  readonly admin: Client<typeof AdminService>;
  /** WorkerService (remote tools, docs/workers.md): ListTools here; serve tools with createWaymarkWorker. */
  readonly workers: Client<typeof WorkerService>;
  /** MCP servers whose tools runs may call (McpService, docs/mcp.md); changing one needs an admin key. */
  readonly mcp: Client<typeof McpService>;
  /** ScheduleService (docs/schedules.md); the methods createSchedule … deleteSchedule wrap it. */
  readonly schedules: ScheduleServiceClient;
  /** The namespace of every call; empty means the server's default. */
  readonly namespace: string;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly sessions: Http2SessionManager | undefined;

  constructor(options: ClientOptions = {}) {
    const connection = openConnection(options);
    this.namespace = connection.namespace;
    this.sessions = connection.sessions;
    const transport = connection.transport;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.policy = { ...DEFAULT_RETRY, ...definedOnly(options.retry ?? {}) };
    this.runs = createClient(RunService, transport);
    this.signals = createClient(SignalService, transport);
    this.health = createClient(Health, transport);
    this.flows = createClient(FlowService, transport);
    this.admin = createClient(AdminService, transport);
    this.workers = createClient(WorkerService, transport);
    this.mcp = createClient(McpService, transport);
    this.schedules = createClient(ScheduleService, transport);
  }

  /** Closes the connection; calls in flight fail. */
  close(): void {
    this.sessions?.abort();
  }

  /**
   * Checks that the server serves (grpc.health.v1 Check of the whole server is SERVING). By
   * default one check that fails fast with Unavailable; `wait` retries with backoff until
   * `timeoutMs` (default the retry budget).
   */
  async ready(options: ReadyOptions = {}): Promise<void> {
    const wait = options.wait ?? false;
    await withRetries(
      { mode: 'safe', policy: this.policy, attemptTimeoutMs: 5_000, timeoutMs: options.timeoutMs ?? (wait ? this.policy.budgetMs : 5_000), signal: options.signal, retry: wait },
      async (_, o) => {
        const { status } = await this.health.check({ service: '' }, o);
        if (status !== Serving.SERVING) throw new Unavailable(`the server is not serving (health status ${Serving[status] ?? status})`, 'status');
      },
    );
  }

  /** One logical call: the retries of `mode` under the client's policy and the call's own options. */
  private unary<T>(mode: RetryMode, o: CallOptions, fn: (attempt: number, options: ConnectCallOptions) => Promise<T>): Promise<T> {
    const policy = o.retry ? { ...this.policy, ...definedOnly(o.retry) } : this.policy;
    return withRetries({ mode, policy, attemptTimeoutMs: this.timeoutMs, timeoutMs: o.timeoutMs, signal: o.signal, retry: o.retry !== false }, fn);
  }

  // Runs

  /**
   * Starts a run of `workflow` with a JSON `input`. Retried safely: without an idempotencyKey the
   * client generates one for this call, and a retry of it that finds the run reports created.
   * With `waitFor` it answers once the run got there (or `timeoutMs` passed): the server answers
   * each attempt a little before its deadline, and the client asks again with the same key.
   */
  async startRun(workflow: string, input: JsonValue | undefined, options: StartOptions = {}): Promise<StartRunResult> {
    const generated = !options.idempotencyKey;
    const waitFor = options.waitFor === undefined ? WaitFor.UNSPECIFIED : toWaitFor(options.waitFor);
    const request = {
      namespace: this.namespace,
      workflow,
      input: toValue(input),
      idempotencyKey: options.idempotencyKey || `client:${randomUUID()}`,
      // With waitFor, `wait` too: a server older than wait_for then waits for the first park at least.
      wait: (options.wait ?? false) || waitFor !== WaitFor.UNSPECIFIED,
      waitFor,
      labels: options.labels ?? {},
      budgetUsd: options.budgetUsd,
      dryRun: options.dryRun ?? false,
      timeout: options.runTimeoutMs === undefined ? undefined : durationFromMs(options.runTimeoutMs),
    };
    let attempts = 0;
    const start = () => this.unary('safe', options, (attempt, o) => {
      attempts = attempt;
      return this.runs.startRun(request, o);
    });
    let asked = Date.now();
    let r = await start();
    const created = r.created || (generated && attempts > 1);
    // Without timeoutMs each attempt has the client's deadline, and an answer at it (wait_complete
    // false after most of it) is asked again; with timeoutMs that one deadline bounds the wait. An
    // answer that came early did not wait (a server that knows no wait_for): no busy loop on it.
    while (waitFor !== WaitFor.UNSPECIFIED && options.timeoutMs === undefined && !r.waitComplete && Date.now() - asked >= this.timeoutMs / 2) {
      options.signal?.throwIfAborted();
      asked = Date.now();
      r = await start();
    }
    return { run: required(r.run, 'run', 'StartRun'), created, waitingOn: r.waitingOn, waitComplete: r.waitComplete };
  }

  /** A run and, when it is suspended, what it waits for (`waitingOn`). */
  async getRun(runId: string, options: CallOptions = {}): Promise<RunState> {
    const r = await this.unary('safe', options, (_, o) => this.runs.getRun({ namespace: this.namespace, runId }, o));
    return { run: required(r.run, 'run', 'GetRun'), waitingOn: r.waitingOn, forks: r.forks };
  }

  /** Iterates over matching runs, newest first, fetching pages as the loop advances. */
  async *listRuns(filter: RunFilter = {}): AsyncGenerator<Run, void, undefined> {
    const request = {
      namespace: this.namespace,
      statuses: (filter.statuses ?? []).map(toRunStatus),
      workflow: filter.workflow ?? '',
      labels: filter.labels ?? {},
      parentRunId: filter.parentRunId ?? '',
      pageSize: filter.pageSize ?? 0,
    };
    let pageToken = '';
    do {
      const token = pageToken;
      const page = await this.unary('safe', filter, (_, o) => this.runs.listRuns({ ...request, pageToken: token }, o));
      yield* page.runs;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /** Iterates over a run's journal in seq order (after `afterSeq` when given). */
  async *journal(runId: string, options: JournalOptions = {}): AsyncGenerator<JournalEntry, void, undefined> {
    let pageToken = '';
    do {
      const token = pageToken;
      const page = await this.unary('safe', options, (_, o) =>
        this.runs.getJournal({
          namespace: this.namespace, runId, afterSeq: options.afterSeq, pageSize: options.pageSize ?? 0, pageToken: token,
          includeLargePayloads: options.includeLargePayloads ?? false,
        }, o));
      yield* page.entries;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /**
   * Yields a run's events: its history, then live events until it ends (or parks, unless
   * `followSuspended`). When the connection drops or the server is unavailable it reconnects by
   * itself with backoff, resuming after the last seq it yielded, so every event arrives exactly
   * once and in seq order; it gives up only after `giveUpAfterMs` with no successful reconnect
   * and no event (docs/clients.md). Other failures throw the typed error. Breaking out of the
   * loop closes the stream.
   */
  async *events(runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent, void, undefined> {
    const { signal, timedOut } = callSignal(options.signal, options.timeoutMs);
    try {
      yield* followEvents({
        runs: this.runs, namespace: this.namespace, runId, afterSeq: options.afterSeq ?? -1n, followSuspended: options.followSuspended ?? false,
        includeLargePayloads: options.includeLargePayloads ?? false,
        policy: options.giveUpAfterMs === undefined ? this.policy : { ...this.policy, streamGiveUpMs: options.giveUpAfterMs },
        onReconnect: options.onReconnect, signal,
      });
    } catch (err) {
      throw timedOut() ? deadline('the event stream', options.timeoutMs) : err;
    }
  }

  /**
   * Yields the text of a run's model calls as the models write it (docs/clients.md "Token
   * streams"): per call and attempt, with a mark when a newer attempt replaces an aborted one (drop
   * that attempt's text) and the call's journaled text when it is recorded. Reconnects as
   * events() does, resuming after the last seq and delta offset, so each delta arrives once.
   */
  async *tokens(runId: string, options: TokensOptions = {}): AsyncGenerator<TokenEvent, void, undefined> {
    const { signal, timedOut } = callSignal(options.signal, options.timeoutMs);
    try {
      yield* tokensOf(followEvents({
        runs: this.runs, namespace: this.namespace, runId, afterSeq: options.afterSeq ?? -1n, followSuspended: options.followSuspended ?? false,
        includeDeltas: true, afterOffset: options.afterOffset ?? -1n,
        policy: options.giveUpAfterMs === undefined ? this.policy : { ...this.policy, streamGiveUpMs: options.giveUpAfterMs },
        onReconnect: options.onReconnect, signal,
      }));
    } catch (err) {
      throw timedOut() ? deadline('the token stream', options.timeoutMs) : err;
    }
  }

  /**
   * Waits for the run to end, following its events (through restarts and parked waits), and
   * returns its output (the JSON the workflow returned; T is not checked). Throws RunFailed or
   * RunCancelled when it ended otherwise.
   */
  async result<T extends JsonValue = JsonValue>(runId: string, options: ResultOptions = {}): Promise<T> {
    const { signal, timedOut } = callSignal(options.signal, options.timeoutMs);
    try {
      for (;;) {
        const { run } = await this.getRun(runId, { signal });
        if (isTerminal(run.status)) return outcome(run) as T;
        const events = this.events(runId, { afterSeq: run.nextSeq - 1n, followSuspended: true, signal, onReconnect: options.onReconnect, giveUpAfterMs: options.giveUpAfterMs });
        for await (const event of events) {
          if (event.body.case === 'statusChanged' && isTerminal(event.body.value.status)) break;
        }
      }
    } catch (err) {
      throw timedOut() ? deadline('the run', options.timeoutMs) : err;
    }
  }

  /**
   * Makes a suspended or failed run execute again; `invalidate` unpins entries by seq.
   * `driftRecovery` ('RESTART' or 'ABANDON') recovers a run that threw FlowDrift; with RESTART
   * `restartedAs` is the new run. With invalidate or RESTART it is retried only when the request
   * never reached the server (a repeat would redo the work: docs/clients.md).
   */
  async resume(runId: string, options: ResumeOptions = {}): Promise<ResumeResult> {
    const driftRecovery = options.driftRecovery === undefined ? DriftRecovery.UNSPECIFIED : toDriftRecovery(options.driftRecovery);
    const invalidate = options.invalidate ?? [];
    const mode: RetryMode = invalidate.length > 0 || driftRecovery === DriftRecovery.RESTART ? 'unsent' : 'safe';
    const request = { namespace: this.namespace, runId, invalidate, driftRecovery };
    let attempts = 0;
    try {
      const r = await this.unary(mode, options, (attempt, o) => {
        attempts = attempt;
        return this.runs.resumeRun(request, o);
      });
      return { run: required(r.run, 'run', 'ResumeRun'), restartedAs: r.restartedAs };
    } catch (err) {
      // A retry of a plain resume that an earlier attempt applied finds the run executing.
      if (mode === 'safe' && attempts > 1 && err instanceof WrongState && (err.status === 'RUNNING' || err.status === 'PENDING')) {
        return { run: (await this.getRun(runId, options)).run, restartedAs: undefined };
      }
      throw err;
    }
  }

  /** What `resume` would do, computed with no live calls and nothing written. */
  async previewResume(runId: string, options: Omit<ResumeOptions, 'driftRecovery'> = {}): Promise<ResumePreview> {
    const request = { namespace: this.namespace, runId, invalidate: options.invalidate ?? [], dryRun: true };
    const r = await this.unary('safe', options, (_, o) => this.runs.resumeRun(request, o));
    return required(r.preview, 'preview', 'ResumeRun');
  }

  /**
   * Forks a run at the entry `atSeq` (docs/forks.md): a new run that keeps every result the source
   * recorded before it and executes from there, with the options' changes. Retried safely: without
   * an idempotencyKey the client generates one for this call, and a retry that finds the fork
   * reports created.
   */
  async fork(runId: string, atSeq: bigint | number, options: ForkOptions = {}): Promise<ForkResult> {
    const generated = !options.idempotencyKey;
    const request = { ...this.forkRequest(runId, atSeq, options), idempotencyKey: options.idempotencyKey || `client:${randomUUID()}`, wait: options.wait ?? false };
    let attempts = 0;
    const r = await this.unary('safe', options, (attempt, o) => {
      attempts = attempt;
      return this.runs.forkRun(request, o);
    });
    return { run: required(r.run, 'run', 'ForkRun'), created: r.created || (generated && attempts > 1), forkSeq: r.forkSeq, waitingOn: r.waitingOn };
  }

  /** What `fork` would keep, redo and cost, computed with no live calls and nothing written. */
  async previewFork(runId: string, atSeq: bigint | number, options: Omit<ForkOptions, 'idempotencyKey' | 'wait'> = {}): Promise<ForkPreview> {
    const r = await this.unary('safe', options, (_, o) => this.runs.forkRun({ ...this.forkRequest(runId, atSeq, options), dryRun: true }, o));
    return required(r.preview, 'preview', 'ForkRun');
  }

  /** Two runs of one workflow effect by effect: output, model, tokens, cost and duration (docs/forks.md "Comparing runs"). */
  async compareRuns(runIdA: string, runIdB: string, options: CallOptions = {}): Promise<CompareRunsResponse> {
    return this.unary('safe', options, (_, o) => this.runs.compareRuns({ namespace: this.namespace, runIdA, runIdB }, o));
  }

  /**
   * Deletes finished runs of the namespace that ended at least `olderThanMs` ago (with `dryRun`,
   * counts them): at most `limit` root runs per call, `more` set when more may match. Needs an
   * admin key (docs/operations.md "Purging runs").
   */
  async purgeRuns(options: PurgeOptions): Promise<PurgeRunsResponse> {
    const statuses = (options.statuses ?? []).map(toRunStatus);
    return this.unary('safe', options, (_, o) => this.runs.purgeRuns({
      namespace: this.namespace, olderThan: durationFromMs(options.olderThanMs), statuses, workflow: options.workflow ?? '',
      dryRun: options.dryRun ?? false, limit: options.limit ?? 0,
    }, o));
  }

  private forkRequest(runId: string, atSeq: bigint | number, options: Omit<ForkOptions, 'idempotencyKey' | 'wait'>) {
    const d = options.decision;
    const decision = d === undefined ? undefined : typeof d === 'string' ? { approve: d === 'approve', comment: '', by: '' } : { approve: d.approve, comment: d.comment ?? '', by: d.by ?? '' };
    return {
      namespace: this.namespace, runId, atSeq: BigInt(atSeq), input: options.input === undefined ? undefined : toValue(options.input),
      model: options.model ?? '', workflowVersion: options.workflowVersion ?? '', decision, budgetUsd: options.budgetUsd, labels: options.labels ?? {},
    };
  }

  /** Cancels a run and its unfinished children; cancelling a finished run returns it unchanged. */
  async cancel(runId: string, options: CallOptions & { reason?: string | undefined } = {}): Promise<Run> {
    const r = await this.unary('safe', options, (_, o) => this.runs.cancelRun({ namespace: this.namespace, runId, reason: options.reason ?? '' }, o));
    return required(r.run, 'run', 'CancelRun');
  }

  async listWorkflows(options: CallOptions = {}): Promise<Workflow[]> {
    return (await this.unary('safe', options, (_, o) => this.runs.listWorkflows({ namespace: this.namespace }, o))).workflows;
  }

  /**
   * Registers a declarative flow (docs/flows.md): a Flow message or its JSON form. Returns the
   * stored version; `created` is false when the content equalled the latest version's (then
   * nothing was stored), which is also why a retry is safe. An invalid flow throws InvalidArgument
   * with one field violation per problem.
   */
  async registerFlow(flow: Flow | JsonValue, options: CallOptions = {}): Promise<{ flow: FlowVersion; created: boolean }> {
    const message = isFlowMessage(flow) ? flow : fromJson(FlowSchema, flow);
    const r = await this.unary('safe', options, (_, o) => this.flows.registerFlow({ namespace: this.namespace, flow: message }, o));
    return { flow: required(r.flow, 'flow', 'RegisterFlow'), created: r.created };
  }

  /** One version of a flow: the latest unless `version` is given. */
  async getFlow(name: string, options: CallOptions & { version?: string | undefined } = {}): Promise<FlowVersion> {
    const r = await this.unary('safe', options, (_, o) => this.flows.getFlow({ namespace: this.namespace, name, version: options.version ?? '' }, o));
    return required(r.flow, 'flow', 'GetFlow');
  }

  /** The latest version of each flow of the namespace, by name. */
  async listFlows(options: CallOptions = {}): Promise<FlowVersion[]> {
    return (await this.unary('safe', options, (_, o) => this.flows.listFlows({ namespace: this.namespace }, o))).flows;
  }

  /** What the run's agents answered and what each answer drew on, and the same for its children. */
  async provenance(runId: string, options: CallOptions = {}): Promise<RunProvenance> {
    const r = await this.unary('safe', options, (_, o) => this.runs.getRunProvenance({ namespace: this.namespace, runId }, o));
    return required(r.provenance, 'provenance', 'GetRunProvenance');
  }

  // Signals and approvals

  /**
   * Delivers a named signal. `signalId` makes it idempotent (default a random id per call, so
   * retries are safe); a repeat is answered with the first delivery's outcome (reason
   * "duplicate"). A run not waiting for the signal yet keeps it for its next wait of that name
   * (`buffered`). Throws AlreadyResolved when another resolution already closed the wait.
   */
  async sendSignal(runId: string, name: string, payload?: JsonValue, options: SignalOptions = {}): Promise<SendSignalResponse> {
    const request = { namespace: this.namespace, runId, name, payload: toValue(payload), signalId: options.signalId || randomUUID() };
    const response = await this.unary('safe', options, (_, o) => this.signals.sendSignal(request, o));
    if (response.reason === DUPLICATE && !response.buffered) {
      // The answer says "delivered before", not whether that delivery won: its journal entry does.
      const [first] = await this.journalPage(runId, response.seq - 1n, options);
      if (first?.status === EntryStatus.NOOP) throw alreadyResolved(`the wait for signal "${name}" of run ${runId}`, response);
      return { ...response, applied: first?.status === EntryStatus.RESOLVED };
    }
    if (!response.applied && response.reason === ALREADY_RESOLVED) throw alreadyResolved(`the wait for signal "${name}" of run ${runId}`, response);
    return response;
  }

  private async journalPage(runId: string, afterSeq: bigint, options: CallOptions): Promise<JournalEntry[]> {
    return (await this.unary('safe', options, (_, o) => this.runs.getJournal({ namespace: this.namespace, runId, afterSeq, pageSize: 1 }, o))).entries;
  }

  /** Iterates over approvals, pending ones unless `states` says otherwise, oldest first. */
  async *listApprovals(filter: ApprovalFilter = {}): AsyncGenerator<Approval, void, undefined> {
    const request = {
      namespace: this.namespace,
      runId: filter.runId ?? '',
      workflow: filter.workflow ?? '',
      labels: filter.labels ?? {},
      states: (filter.states ?? []).map(toApprovalState),
      pageSize: filter.pageSize ?? 0,
    };
    let pageToken = '';
    do {
      const token = pageToken;
      const page = await this.unary('safe', filter, (_, o) => this.signals.listApprovals({ ...request, pageToken: token }, o));
      yield* page.approvals;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  async getApproval(id: string, options: CallOptions = {}): Promise<Approval> {
    const r = await this.unary('safe', options, (_, o) => this.signals.getApproval({ namespace: this.namespace, id }, o));
    return required(r.approval, 'approval', 'GetApproval');
  }

  /**
   * Approves. Retried safely (the request id, random per call unless given, is applied once); a
   * repeated request id is answered with the first decision's outcome (reason "duplicate").
   * Throws AlreadyResolved (with `response`) when another decision, a timeout or a cancellation
   * resolved the approval first.
   */
  async approve(id: string, decision: Decision): Promise<DecisionResult> {
    return this.decide(id, true, decision);
  }

  /** Denies; see `approve`. */
  async deny(id: string, decision: Decision): Promise<DecisionResult> {
    return this.decide(id, false, decision);
  }

  private async decide(id: string, approve: boolean, d: Decision): Promise<DecisionResult> {
    const request = {
      namespace: this.namespace, id, approve, by: d.by, comment: d.comment ?? '', payload: toValue(d.payload), requestId: d.requestId || randomUUID(),
    };
    const response = await this.unary('safe', d, (_, o) => this.signals.decideApproval(request, o));
    const approval = required(response.approval, 'approval', 'DecideApproval');
    if (response.reason === DUPLICATE) {
      // The first decision with this request id won if the approval is decided its way, by its author.
      const won = approval.decidedBy === d.by && approval.state === (approve ? ApprovalState.APPROVED : ApprovalState.DENIED);
      if (!won) throw alreadyResolved(`approval ${id}`, response);
      return { approval, applied: true, reason: DUPLICATE };
    }
    if (!response.applied && response.reason === ALREADY_RESOLVED) throw alreadyResolved(`approval ${id}`, response);
    return { approval, applied: response.applied, reason: response.reason };
  }

  // Schedules (docs/schedules.md)

  /** Creates schedule `id`; AlreadyExists (SCHEDULE_EXISTS) when the namespace has one. Retried only when the request never reached the server. */
  async createSchedule(id: string, definition: ScheduleDefinition, options: CallOptions = {}): Promise<Schedule> {
    const request = { namespace: this.namespace, schedule: scheduleMessage(id, definition) };
    return required((await this.unary('unsent', options, (_, o) => this.schedules.createSchedule(request, o))).schedule, 'schedule', 'CreateSchedule');
  }

  /** A schedule with its counters, recent actions and next ten times; ScheduleNotFound when there is none. */
  async getSchedule(id: string, options: CallOptions = {}): Promise<Schedule> {
    return required((await this.unary('safe', options, (_, o) => this.schedules.getSchedule({ namespace: this.namespace, scheduleId: id }, o))).schedule, 'schedule', 'GetSchedule');
  }

  /** Iterates over the namespace's schedules by id (each with its next time only), fetching pages as the loop advances. */
  async *listSchedules(options: ScheduleListOptions = {}): AsyncGenerator<Schedule, void, undefined> {
    let pageToken = '';
    do {
      const token = pageToken;
      const page = await this.unary('safe', options, (_, o) => this.schedules.listSchedules({ namespace: this.namespace, pageSize: options.pageSize ?? 0, pageToken: token }, o));
      yield* page.schedules;
      pageToken = page.nextPageToken;
    } while (pageToken);
  }

  /**
   * Changes the fields `changes` names and keeps the rest: the schedule is read, the groups it
   * touches (spec, action, policies, remaining actions) are sent whole with an update mask. A new
   * spec ticks from now on. A key given as undefined clears that field (remainingActions: unlimited).
   */
  async updateSchedule(id: string, changes: Partial<ScheduleDefinition>, options: CallOptions = {}): Promise<Schedule> {
    const { paths, schedule } = scheduleUpdate(await this.getSchedule(id, options), changes);
    const request = { namespace: this.namespace, scheduleId: id, schedule, updateMask: { paths } };
    return required((await this.unary('safe', options, (_, o) => this.schedules.updateSchedule(request, o))).schedule, 'schedule', 'UpdateSchedule');
  }

  /** Pauses a schedule (no ticks; triggers and backfills wait); `note` says why. */
  async pauseSchedule(id: string, options: CallOptions & { note?: string | undefined } = {}): Promise<Schedule> {
    const request = { namespace: this.namespace, scheduleId: id, note: options.note ?? '' };
    return required((await this.unary('safe', options, (_, o) => this.schedules.pauseSchedule(request, o))).schedule, 'schedule', 'PauseSchedule');
  }

  /** Unpauses a schedule; what fell while it was paused is not caught up. */
  async unpauseSchedule(id: string, options: CallOptions & { note?: string | undefined } = {}): Promise<Schedule> {
    const request = { namespace: this.namespace, scheduleId: id, note: options.note ?? '' };
    return required((await this.unary('safe', options, (_, o) => this.schedules.unpauseSchedule(request, o))).schedule, 'schedule', 'UnpauseSchedule');
  }

  /** Queues one run now (the sweeper starts it); retried only when the request never reached the server, as a repeat would queue another. */
  async triggerSchedule(id: string, options: ScheduleStartOptions = {}): Promise<Schedule> {
    const request = { namespace: this.namespace, scheduleId: id, ...(options.overlap !== undefined ? { overlap: toOverlapPolicy(options.overlap) } : {}) };
    return required((await this.unary('unsent', options, (_, o) => this.schedules.triggerSchedule(request, o))).schedule, 'schedule', 'TriggerSchedule');
  }

  /** Queues a run for every tick in [start, end] (at most 1,000); a time that already ran is not run again, so a retry is safe. */
  async backfillSchedule(id: string, start: Date, end: Date, options: ScheduleStartOptions = {}): Promise<{ schedule: Schedule; queued: number }> {
    const request = {
      namespace: this.namespace, scheduleId: id, startTime: timestampFromDate(start), endTime: timestampFromDate(end),
      ...(options.overlap !== undefined ? { overlap: toOverlapPolicy(options.overlap) } : {}),
    };
    const r = await this.unary('safe', options, (_, o) => this.schedules.backfillSchedule(request, o));
    return { schedule: required(r.schedule, 'schedule', 'BackfillSchedule'), queued: r.queued };
  }

  /** Deletes a schedule (its runs are kept); ScheduleNotFound when there is none, unless an earlier attempt of this call deleted it. */
  async deleteSchedule(id: string, options: CallOptions = {}): Promise<void> {
    let attempts = 0;
    try {
      await this.unary('safe', options, (attempt, o) => {
        attempts = attempt;
        return this.schedules.deleteSchedule({ namespace: this.namespace, scheduleId: id }, o);
      });
    } catch (err) {
      if (!(err instanceof ScheduleNotFound && attempts > 1)) throw err;
    }
  }

  // API keys and stream tokens (docs/security.md)

  /**
   * Creates an API key (AdminService; the client's token must be an admin key) for `namespace`
   * (empty: every namespace) with `scopes`. The answer's `secret` is shown once. Not retried once
   * sent: a retry could create a second key. `clientCertSha256` binds an mTLS client certificate
   * (the SHA-256 of its DER bytes, hex) that then authenticates as the key without the secret.
   */
  async createKey(
    params: { name?: string; namespace?: string; scopes: string[]; clientCertSha256?: string | undefined }, options: CallOptions = {},
  ): Promise<{ key: ApiKey; secret: string }> {
    const request = { name: params.name ?? '', namespace: params.namespace ?? '', scopes: params.scopes, clientCertSha256: params.clientCertSha256 ?? '' };
    const r = await this.unary('unsent', options, (_, o) => this.admin.createKey(request, o));
    return { key: required(r.key, 'key', 'CreateKey'), secret: r.secret };
  }

  /** API keys, newest first, without secrets; `namespace` filters, revoked ones only with `includeRevoked`. */
  async listKeys(filter: CallOptions & { namespace?: string | undefined; includeRevoked?: boolean | undefined } = {}): Promise<ApiKey[]> {
    const request = { namespace: filter.namespace ?? '', includeRevoked: filter.includeRevoked ?? false };
    return (await this.unary('safe', filter, (_, o) => this.admin.listKeys(request, o))).keys;
  }

  /** Revokes a key by id (idempotent: a revoked key is returned unchanged). */
  async revokeKey(id: string, options: CallOptions = {}): Promise<ApiKey> {
    return required((await this.unary('safe', options, (_, o) => this.admin.revokeKey({ id }, o))).key, 'key', 'RevokeKey');
  }

  /** A short-lived read-only token for one run's events (StreamRunEvents and GetRun of that run), e.g. for a browser. */
  async createStreamToken(runId: string, options: CallOptions & { ttlMs?: number | undefined } = {}): Promise<{ token: string; expiresAt: Date }> {
    const request = { namespace: this.namespace, runId, ...(options.ttlMs !== undefined ? { ttl: durationFromMs(options.ttlMs) } : {}) };
    const r = await this.unary('safe', options, (_, o) => this.runs.createStreamToken(request, o));
    return { token: r.token, expiresAt: timestampDate(required(r.expireTime, 'expire_time', 'CreateStreamToken')) };
  }
}

/** A client for `address` (default 127.0.0.1:50051); see ClientOptions. Connects on the first call. */
export function createWaymarkClient(options: ClientOptions = {}): WaymarkClient {
  return new WaymarkClient(options);
}

/**
 * A client whose server answered a readiness check (`ready`): fails fast with Unavailable when it
 * cannot be reached, or waits for it with `ready: { wait: true }`.
 */
export async function connectWaymarkClient(options: ClientOptions & { ready?: ReadyOptions | undefined } = {}): Promise<WaymarkClient> {
  const client = new WaymarkClient(options);
  try {
    await client.ready(options.ready);
    return client;
  } catch (err) {
    client.close();
    throw err;
  }
}

/** A JSON value as google.protobuf.Value; undefined leaves the payload unset. */
export function toValue(json: JsonValue | undefined): Value | undefined {
  return json === undefined ? undefined : fromJson(ValueSchema, json);
}

/** A google.protobuf.Value as plain JSON; unset is undefined. */
export function fromValue(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

/** The output of an ended run, or its failure thrown. */
function outcome(run: Run): JsonValue {
  if (run.status === RunStatus.SUCCEEDED) return fromValue(run.output) ?? null;
  if (run.status === RunStatus.CANCELLED) throw new RunCancelled(run, run.error);
  throw new RunFailed(run, run.error);
}

/** The caller's signal joined with a timer for `timeoutMs`; `timedOut` says whether the timer ended it. */
function callSignal(signal: AbortSignal | undefined, timeoutMs: number | undefined): { signal: AbortSignal; timedOut: () => boolean } {
  const timer = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
  const parts = [signal, timer].filter((s): s is AbortSignal => s !== undefined);
  const joined = parts.length === 0 ? new AbortController().signal : parts.length === 1 ? parts[0]! : AbortSignal.any(parts);
  return { signal: joined, timedOut: () => timer?.aborted === true && signal?.aborted !== true };
}

function deadline(what: string, timeoutMs: number | undefined): WaymarkError {
  return new WaymarkError(Code.DeadlineExceeded, `${what} did not end within timeoutMs (${timeoutMs} ms)`);
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

function isFlowMessage(value: Flow | JsonValue): value is Flow {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && (value as { $typeName?: unknown }).$typeName === FlowSchema.typeName;
}
