// runtime/: the WorkerService use cases: a worker's registration, long poll, heartbeat and result (docs/workers.md).
// Must not execute runs (the caller decides where a run its result made runnable continues) nor journal outside the store's fenced task methods.
import { randomBytes } from 'node:crypto';
import type { DefinitionLimits } from '../../journal/definition-limits.js';
import { assertPayloadSize } from '../../journal/limits.js';
import type { Json, RunError } from '../../journal/run.js';
import { TaskLostError, WorkerNotFoundError } from '../../journal/worker-errors.js';
import type { JournalStore, RemoteTask, RemoteToolDeclaration, RemoteToolInfo } from '../../store/store.js';
import { InvalidDeclarationError, NonRetryableError, RetriesExhaustedError, type FieldViolation } from '../errors.js';
import { errorRecord } from '../replay/error-codec.js';
import { schemaCompiler } from '../replay/schema-compiler.js';
import { LoopShare } from '../replay/loop-share.js';
import type { Registry } from '../registry.js';
import { unsafeRemoteNoFence } from './crashpoint.js';
import type { RemoteCalls } from './remote-calls.js';
import type { EffectTracer } from './effect-tracer.js';

/*
 * A worker registers its tools, then long-polls for tasks, heartbeats the one it holds and returns
 * its result. Everything durable is in the store (tasks, their fencing tokens, declarations), so
 * any replica may answer any of these calls: a poll on one replica, the result on another.
 */

export const WORKER_DEFAULTS = {
  workerTtlMs: 60_000,
  pollWaitMs: 30_000,
  timeoutMs: 600_000,
  heartbeatTimeoutMs: 30_000,
  maxAttempts: 3,
  /** Backoff between attempts after a retryable failure: 1 s, doubling, at most 60 s. */
  retryInitialMs: 1_000,
  retryMaxMs: 60_000,
} as const;

export type { RemoteTask, RemoteToolDeclaration } from '../../store/store.js';

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const WORKER_ID = /^[\x21-\x7e]{1,128}$/;

/** What a worker reports when its tool failed. */
export interface TaskFailure {
  name: string;
  message: string;
  nonRetryable: boolean;
  retryAfterMs: number | null;
}

export interface TaskCompleteResult {
  applied: boolean;
  willRetry: boolean;
  /** The run this result made runnable (the caller may execute it now), or null. */
  runnable: { runId: string; runnable: boolean } | null;
}

/** A task handed to a worker, with its span's W3C trace context when the server traces (docs/tracing.md). */
export type PolledTask = RemoteTask & { traceparent?: string };

/** One tool runs of a namespace can call, for ListTools. */
export interface ServedToolView {
  declaration: RemoteToolDeclaration;
  remote: boolean;
  workers: string[];
}

export class WorkerTasks {
  constructor(
    private readonly store: JournalStore,
    private readonly registry: Registry,
    private readonly remote: RemoteCalls,
    private readonly tracer: EffectTracer | null = null,
  ) {}

  /**
   * RegisterWorker: validates the declarations (InvalidDeclarationError naming the request's fields,
   * nothing written) and records them. Schemas are compiled one at a time with a turn of the event
   * loop between (a request of many large schemas must not hold the replica), and cached by content.
   */
  async register(params: { namespace: string; workerId: string; tools: RemoteToolDeclaration[]; ttlMs: number | null }): Promise<{ workerId: string }> {
    const violations: FieldViolation[] = [];
    const limits = this.store.limits.definitions;
    const workerId = params.workerId === '' ? `worker-${randomBytes(6).toString('hex')}` : params.workerId;
    if (!WORKER_ID.test(workerId)) violations.push({ field: 'worker_id', description: 'must be 1 to 128 printable ASCII characters without spaces' });
    if (params.tools.length === 0) violations.push({ field: 'tools', description: 'declare at least one tool' });
    if (params.tools.length > limits.workerTools) {
      throw new InvalidDeclarationError('the worker registration', [
        { field: 'tools', description: `declares ${params.tools.length} tools; a worker may declare at most ${limits.workerTools} (WAYMARK_MAX_WORKER_TOOLS)` },
      ]);
    }
    const seen = new Set<string>();
    const share = new LoopShare();
    for (const [i, t] of params.tools.entries()) {
      const at = `tools[${i}]`;
      if (!TOOL_NAME.test(t.name)) violations.push({ field: `${at}.name`, description: 'must be 1 to 64 of A-Z a-z 0-9 _ -' });
      else if (this.registry.hasTool(t.name)) violations.push({ field: `${at}.name`, description: `"${t.name}" is an in-process tool of this server; pick another name` });
      if (seen.has(t.name)) violations.push({ field: `${at}.name`, description: `"${t.name}" is declared twice` });
      seen.add(t.name);
      if (t.inputSchema !== null) {
        const problem = schemaProblem(t.inputSchema, limits);
        if (problem) violations.push({ field: `${at}.input_schema`, description: problem });
        await share.pause();
      }
      if (t.timeoutMs < 1) violations.push({ field: `${at}.timeout`, description: 'must be at least 1ms' });
      if (t.heartbeatTimeoutMs < 100) violations.push({ field: `${at}.heartbeat_timeout`, description: 'must be at least 100ms' });
      if (t.maxAttempts > 100) violations.push({ field: `${at}.max_attempts`, description: 'must be at most 100' });
    }
    if (params.ttlMs !== null && params.ttlMs < 1000) violations.push({ field: 'worker_ttl', description: 'must be at least 1s' });
    if (violations.length === 0) {
      const served = new Set((await this.store.remoteToolList({ namespace: params.namespace })).map((r) => r.declaration.name));
      for (const name of seen) served.add(name);
      if (served.size > limits.namespaceTools) {
        violations.push({ field: 'tools', description: `would make ${served.size} remote tools in namespace "${params.namespace}"; a namespace may have at most ${limits.namespaceTools} (WAYMARK_MAX_NAMESPACE_TOOLS)` });
      }
    }
    if (violations.length > 0) throw new InvalidDeclarationError('the worker registration', violations);
    await this.store.workerHeartbeat({ namespace: params.namespace, workerId, tools: params.tools, ttlMs: params.ttlMs ?? WORKER_DEFAULTS.workerTtlMs });
    this.remote.forget(params.namespace);
    return { workerId };
  }

  /**
   * PollTask: claims one task of the worker's tools, waiting up to `waitMs` for one: woken by a
   * task wake-up (created or retried on any replica), or at the time the next task becomes
   * claimable by time alone (remoteTaskNextAt), or at the slow safety re-check. Null when none
   * came or `signal` fired (the caller went away).
   */
  async poll(params: { namespace: string; workerId: string; tools: string[]; queue: string; waitMs: number | null; signal: AbortSignal }): Promise<PolledTask | null> {
    const waitMs = Math.min(params.waitMs ?? WORKER_DEFAULTS.pollWaitMs, WORKER_DEFAULTS.pollWaitMs);
    if (!(await this.store.workerHeartbeat({ namespace: params.namespace, workerId: params.workerId, ttlMs: WORKER_DEFAULTS.workerTtlMs }))) {
      throw new WorkerNotFoundError(params.workerId);
    }
    const tools = params.tools.length > 0 ? params.tools : await this.toolsOf(params.namespace, params.workerId);
    const until = Date.now() + waitMs;
    const which = { namespace: params.namespace, tools, queue: params.queue };
    // Listening before each look at the store: a task created meanwhile ends the wait at once.
    const wakeups = await this.remote.listen(params.namespace, params.signal);
    try {
      for (;;) {
        if (params.signal.aborted) return null;
        const [task] = await this.store.remoteTaskClaim({ ...which, workerId: params.workerId, limit: 1 });
        if (task) return this.tracer ? { ...task, traceparent: this.tracer.taskTraceparent(task) } : task;
        const next = await this.store.remoteTaskNextAt(which);
        const left = until - Date.now();
        if (left <= 0) return null;
        await wakeups.wait(Math.min(left, next ?? Infinity, this.remote.pollEveryMs));
      }
    } finally {
      wakeups.close();
    }
  }

  /** Heartbeat: TaskLostError when the worker no longer holds the task. */
  async heartbeat(params: { namespace: string; workerId: string; taskId: string; token: number }): Promise<RemoteTask> {
    const task = await this.store.remoteTaskHeartbeat({ namespace: params.namespace, taskId: params.taskId, workerId: params.workerId, attempt: params.token });
    if (!task) throw new TaskLostError(params.taskId, params.token);
    return task;
  }

  /**
   * CompleteTask: the output, or a failure (retried after a backoff while attempts remain and it
   * is retryable; otherwise journaled as the call's error). TaskLostError for a stale token.
   */
  async complete(params: { namespace: string; workerId: string; taskId: string; token: number; outcome: { output: Json } | { failure: TaskFailure } }): Promise<TaskCompleteResult> {
    let fence = { namespace: params.namespace, taskId: params.taskId, workerId: params.workerId, attempt: params.token };
    if (unsafeRemoteNoFence) {
      // The negative control (crashpoint.ts): whoever holds the task now, the caller's result goes in.
      const current = (await this.store.remoteTaskList({ runId: runIdOf(params.taskId) })).find((t) => t.id === params.taskId);
      if (current?.holder) fence = { ...fence, workerId: current.holder, attempt: current.attempt };
    }
    // Read for the task attempt's span only (docs/tracing.md): nothing is read for it when the server does not trace.
    const traced = this.tracer ? (await this.store.remoteTaskList({ runId: runIdOf(params.taskId) })).find((t) => t.id === params.taskId) : undefined;
    const span = (outcome: 'ok' | 'error' | 'retrying', error?: string): void => {
      if (traced && traced.attempt === params.token) {
        this.tracer!.taskEnded({ ...traced, since: traced.availableAt, workerId: params.workerId, outcome, ...(error !== undefined ? { error } : {}) });
      }
    };
    let payload: Json;
    if ('output' in params.outcome) {
      payload = { source: 'worker', value: params.outcome.output, attempt: params.token };
      // Sized as it is stored, named as the request's field (the store would name its entry's payload).
      assertPayloadSize('output', payload, this.store.limits.payloadBytes);
    } else {
      const failure = params.outcome.failure;
      const record: RunError = { name: failure.name || 'Error', message: failure.message };
      if (!failure.nonRetryable) {
        const task = (await this.store.remoteTaskList({ runId: runIdOf(params.taskId) })).find((t) => t.id === params.taskId);
        if (task && params.token < task.maxAttempts) {
          const backoff = Math.min(WORKER_DEFAULTS.retryInitialMs * 2 ** (params.token - 1), WORKER_DEFAULTS.retryMaxMs);
          const retried = await this.store.remoteTaskRetry({ ...fence, delayMs: Math.max(backoff, failure.retryAfterMs ?? 0), error: record as unknown as Json });
          if (!retried) throw new TaskLostError(params.taskId, params.token);
          span('retrying', record.name);
          return { applied: true, willRetry: true, runnable: null };
        }
        const error = errorRecord(new RetriesExhaustedError('tool', task?.tool ?? 'remote', params.token, record));
        payload = { source: 'worker', error: error as unknown as Json, attempt: params.token };
      } else {
        // The worker's name and message, marked as NonRetryableError marks a local failure.
        const error: RunError = { name: record.name, message: record.message, reason: new NonRetryableError(record.message).reason.toLowerCase() };
        payload = { source: 'worker', error: error as unknown as Json, attempt: params.token };
      }
    }
    const result = await this.store.remoteTaskComplete({ ...fence, payload, dedupeKey: `remote:${params.taskId}:${params.token}` });
    if (result.outcome === 'fenced') throw new TaskLostError(params.taskId, params.token);
    if (result.outcome === 'closed') return { applied: false, willRetry: false, runnable: null };
    span('output' in params.outcome ? 'ok' : 'error', 'failure' in params.outcome ? params.outcome.failure.name || 'Error' : undefined);
    const { resolution } = result;
    return { applied: true, willRetry: false, runnable: { runId: runIdOf(params.taskId), runnable: resolution.applied && !resolution.duplicate } };
  }

  /** ListTools: the namespace's remote tools with their live workers, then the in-process tools. */
  async tools(params: { namespace: string }): Promise<ServedToolView[]> {
    const remote = await this.store.remoteToolList({ namespace: params.namespace });
    const local = this.registry.tools().map((t): ServedToolView => ({
      declaration: {
        name: t.name, description: t.description, inputSchema: t.inputSchema, outputSchema: null,
        mutating: mutatingByDefault(t), policy: t.policy, timeoutMs: t.timeoutMs ?? 0, heartbeatTimeoutMs: 0,
        maxAttempts: t.retry?.maxAttempts ?? 1, queue: '',
      },
      remote: false,
      workers: [],
    }));
    return [...remote.map((r: RemoteToolInfo): ServedToolView => ({ declaration: r.declaration, remote: true, workers: r.workers })), ...local]
      .sort((a, b) => (a.declaration.name < b.declaration.name ? -1 : a.declaration.name > b.declaration.name ? 1 : 0));
  }

  /** The tools a worker registered (it may have registered on another replica). */
  private async toolsOf(namespace: string, workerId: string): Promise<string[]> {
    const list = await this.store.remoteToolList({ namespace });
    return list.filter((t) => t.workers.includes(workerId)).map((t) => t.declaration.name);
  }
}

/** Whether an in-process tool changes the world for arguments it decides on per call (the http tool): asked with none, true when it cannot say. */
function mutatingByDefault(tool: { isMutating(args: unknown): boolean }): boolean {
  try {
    return tool.isMutating({});
  } catch {
    return true;
  }
}

function runIdOf(taskId: string): string {
  const at = taskId.lastIndexOf(':');
  return at > 0 ? taskId.slice(0, at) : taskId;
}

/** Why a declared JSON Schema cannot be used to validate arguments, or null. */
function schemaProblem(schema: Json, limits: DefinitionLimits): string | null {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return 'must be a JSON Schema object';
  const problem = schemaCompiler.problem(schema, { bytes: limits.schemaBytes, depth: limits.schemaDepth });
  return problem === null ? null : `is not a usable JSON Schema (draft 2020-12): it ${problem}`;
}
