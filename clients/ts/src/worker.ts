import type { JsonValue } from '@bufbuild/protobuf';
import { durationFromMs, timestampDate } from '@bufbuild/protobuf/wkt';
import { createClient, type Client, type Transport } from '@connectrpc/connect';
import type { Http2SessionManager } from '@connectrpc/connect-node';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { fromValue, toValue } from './client.js';
import { TaskLost, toWaymarkError, Unavailable, WorkerNotFound } from './errors.js';
import { ToolPolicy, WorkerService, type RemoteTask, type ToolDeclaration } from './gen/waymark/v1/worker_service_pb.js';
import type { TlsOptions, TokenSource } from './options.js';
import { openConnection } from './environment.js';

/*
 * A worker: serves remote tools that Waymark runs call durably (docs/workers.md). Register tools
 * with `worker.tool({ name, input, execute })`, then `await worker.run()`. Each task's tool gets
 * the call's idempotency key (the same on every redispatch: pass it downstream) and an AbortSignal
 * that fires when the task is lost (another worker took it over, the call timed out) or the worker
 * stops. The worker heartbeats a task while its tool runs; a thrown NonRetryableToolError fails the
 * call at once, any other error is retried by Waymark on another dispatch while attempts remain.
 */

/** A zod (v4) schema, or anything with the same two methods. */
export interface SchemaLike<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: { message: string } };
  toJSONSchema(): unknown;
}

/** A JSON Schema object (draft 2020-12). */
export type JsonSchema = { [key: string]: JsonValue };

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  /** Stable for this call across crashes and redispatches: pass it to the downstream API. */
  idempotencyKey: string;
  runId: string;
  taskId: string;
  /** 1 for the first dispatch, then one more per redispatch. */
  attempt: number;
  /** When the call fails with a timeout if no result came. */
  deadline: Date;
  /** Fires when the task is lost (another worker holds it now, or the call was closed), its deadline passes, or the worker stops. */
  signal: AbortSignal;
  /**
   * The W3C `traceparent` of this task attempt's span when the server traces (docs/tracing.md), or
   * undefined: make it the parent of the tool's spans, or send it on the calls the tool makes.
   */
  traceparent: string | undefined;
}

export interface ToolOptions<I, O> {
  name: string;
  description?: string | undefined;
  /** A zod schema (validated here too) or a JSON Schema; the server validates calls against it and agents' models see it. */
  input: SchemaLike<I> | JsonSchema;
  /** The result's JSON Schema (a zod schema or JSON Schema), shown to people and models. */
  output?: SchemaLike<O> | JsonSchema | undefined;
  /** Whether the tool changes the world (default true); read-only tools also run in dry runs. */
  mutating?: boolean | undefined;
  policy?: 'allow' | 'ask' | 'deny' | undefined;
  /** The whole call across redispatches (default 10 minutes). */
  timeoutMs?: number | undefined;
  /** A task is lost after this long without a heartbeat (default 30 s); the worker heartbeats at a third of it. */
  heartbeatTimeoutMs?: number | undefined;
  /** Dispatches a call gets for retryable failures (default 3). */
  maxAttempts?: number | undefined;
  execute(input: I, context: ToolContext): O | Promise<O>;
}

export interface WorkerOptions {
  /** `host:port` (default: WAYMARK_ADDRESS, else 127.0.0.1:50051). */
  address?: string | undefined;
  /** As ClientOptions.tls, with the same environment variables. */
  tls?: boolean | TlsOptions | undefined;
  /** An API key with the `tools:serve` scope when the server has authentication on (default: WAYMARK_TOKEN). */
  token?: TokenSource | undefined;
  /** Default: WAYMARK_NAMESPACE, else the server's. */
  namespace?: string | undefined;
  /** Kept across reconnects; default `<host>:<pid>:<random>`. */
  workerId?: string | undefined;
  /** Tasks of this queue only (default: the default queue); every tool of this worker is declared in it. */
  queue?: string | undefined;
  /** Tasks run at once (default 4, as the Go and Python workers): each idle slot keeps one long poll open. */
  concurrency?: number | undefined;
  /**
   * After `stop()`, how long results still being delivered (to a server that may have gone away)
   * are retried before the worker gives them up and run() resolves; default 10 s, as the Go and
   * Python workers' shutdown grace. A task given up is dispatched again once its claim lapses.
   */
  shutdownGraceMs?: number | undefined;
  /** How long one PollTask waits (default 20 s, under the server's 30 s cap). */
  pollWaitMs?: number | undefined;
  transport?: Transport | undefined;
  /**
   * What the worker does (the tools it serves once registered, lost tasks, retried calls); default
   * one line each on stderr, as the Go and Python workers log. `() => {}` silences it.
   */
  log?: ((line: string, fields: Record<string, unknown>) => void) | undefined;
}

/** Thrown by a tool: the call fails now, without another attempt (the workflow sees the failure). */
export class NonRetryableToolError extends Error {
  readonly nonRetryable = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableToolError';
  }
}

interface Registered {
  declaration: ToolDeclaration;
  parse: (value: unknown) => { ok: true; value: unknown } | { ok: false; message: string };
  execute: (input: unknown, context: ToolContext) => unknown;
  heartbeatMs: number;
}

const REREGISTER_MS = 20_000;

export class WaymarkWorker {
  readonly service: Client<typeof WorkerService>;
  readonly namespace: string;
  workerId: string;
  private readonly tools = new Map<string, Registered>();
  private readonly options: WorkerOptions;
  private readonly sessions: Http2SessionManager | undefined;
  private readonly stopping = new AbortController();
  /** Aborted shutdownGraceMs after the stop: a result still on its way then is given up. */
  private readonly graceOver = new AbortController();
  private running: Promise<void> | null = null;

  constructor(options: WorkerOptions = {}) {
    this.options = options;
    const connection = openConnection(options);
    this.namespace = connection.namespace;
    this.sessions = connection.sessions;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.service = createClient(WorkerService, connection.transport);
    this.stopping.signal.addEventListener('abort', () => {
      setTimeout(() => this.graceOver.abort(new Error('the shutdown grace ended')), options.shutdownGraceMs ?? 10_000).unref();
    }, { once: true });
  }

  /** Declares a tool this worker serves (before `run`). */
  tool<I, O>(options: ToolOptions<I, O>): this {
    if (this.running) throw new Error('declare tools before worker.run()');
    if (this.tools.has(options.name)) throw new Error(`tool "${options.name}" is declared twice`);
    const zod = isSchemaLike<I>(options.input) ? options.input : null;
    const heartbeatTimeoutMs = options.heartbeatTimeoutMs ?? 30_000;
    const declaration = {
      $typeName: 'waymark.v1.ToolDeclaration',
      name: options.name,
      description: options.description ?? '',
      inputSchema: toValue(schemaJson(options.input)),
      outputSchema: options.output === undefined ? undefined : toValue(schemaJson(options.output)),
      mutating: options.mutating ?? true,
      policy: options.policy === 'ask' ? ToolPolicy.ASK : options.policy === 'deny' ? ToolPolicy.DENY : ToolPolicy.ALLOW,
      timeout: options.timeoutMs === undefined ? undefined : durationFromMs(options.timeoutMs),
      heartbeatTimeout: durationFromMs(heartbeatTimeoutMs),
      maxAttempts: options.maxAttempts ?? 0,
      queue: this.options.queue ?? '',
    } as ToolDeclaration;
    this.tools.set(options.name, {
      declaration,
      parse: zod
        ? (value) => {
          const r = zod.safeParse(value);
          return r.success ? { ok: true, value: r.data } : { ok: false, message: r.error.message };
        }
        : (value) => ({ ok: true, value }),
      execute: options.execute as (input: unknown, context: ToolContext) => unknown,
      heartbeatMs: Math.max(50, Math.floor(heartbeatTimeoutMs / 3)),
    });
    return this;
  }

  /** Registers the tools, then serves tasks until `stop()` (or `signal`); resolves once stopped and in-flight tasks ended. */
  run(options: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    if (this.tools.size === 0) return Promise.reject(new Error('declare at least one tool with worker.tool() before run()'));
    options.signal?.addEventListener('abort', () => this.stopping.abort(), { once: true });
    this.running ??= this.serve();
    return this.running;
  }

  /** Stops polling; tasks in flight get their signal aborted and their results are still sent. Resolves when run() has ended. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.running?.catch(() => {});
    this.sessions?.abort();
  }

  private async serve(): Promise<void> {
    // The first registration is retried while the server cannot be reached; a refusal (a bad declaration) ends run().
    for (let backoffMs = 100; ; backoffMs = Math.min(backoffMs * 2, 5_000)) {
      try {
        await this.register();
        break;
      } catch (err) {
        const e = toWaymarkError(err);
        if (!(e instanceof Unavailable) || this.stopping.signal.aborted) throw e;
        this.log('registration failed; retrying', { err: e.message });
        await sleep(backoffMs, this.stopping.signal);
      }
    }
    this.log('registered', { workerId: this.workerId, tools: [...this.tools.keys()], queue: this.options.queue ?? '' });
    const refresh = setInterval(() => void this.register().catch((err: unknown) => this.log('registration failed', { err: String(err) })), REREGISTER_MS);
    refresh.unref();
    try {
      const slots = Math.max(1, this.options.concurrency ?? 4);
      await Promise.all(Array.from({ length: slots }, () => this.loop()));
    } finally {
      clearInterval(refresh);
    }
  }

  private async register(): Promise<void> {
    const res = await this.service.registerWorker({ namespace: this.namespace, workerId: this.workerId, tools: [...this.tools.values()].map((t) => t.declaration) });
    this.workerId = res.workerId;
  }

  private async loop(): Promise<void> {
    let backoffMs = 100;
    const stop = this.stopping.signal;
    while (!stop.aborted) {
      let task: RemoteTask | undefined;
      try {
        const res = await this.service.pollTask(
          { namespace: this.namespace, workerId: this.workerId, queue: this.options.queue ?? '', wait: durationFromMs(this.options.pollWaitMs ?? 20_000) },
          { signal: stop, timeoutMs: (this.options.pollWaitMs ?? 20_000) + 10_000 },
        );
        task = res.task;
        backoffMs = 100;
      } catch (err) {
        if (stop.aborted) return;
        const e = toWaymarkError(err);
        if (e instanceof WorkerNotFound) await this.register().catch(() => {});
        else this.log('poll failed; retrying', { err: e.message });
        await sleep(backoffMs, stop);
        backoffMs = Math.min(backoffMs * 2, 5_000);
        continue;
      }
      if (task) await this.handle(task);
    }
  }

  private async handle(task: RemoteTask): Promise<void> {
    const tool = this.tools.get(task.tool);
    const fence = { namespace: this.namespace, workerId: this.workerId, taskId: task.taskId, fencingToken: task.fencingToken };
    const lost = new AbortController();
    const onStop = (): void => lost.abort(new Error('the worker is stopping'));
    this.stopping.signal.addEventListener('abort', onStop, { once: true });
    // Past the call's deadline the server has failed it with a timeout: the tool is told, as Go's and Python's are.
    const untilDeadline = task.deadline ? timestampDate(task.deadline).getTime() - Date.now() : null;
    const deadline = untilDeadline !== null && untilDeadline < 2 ** 31 - 1
      ? setTimeout(() => lost.abort(new Error('the call\'s deadline passed')), Math.max(0, untilDeadline))
      : null;
    const beat = setInterval(() => {
      this.service.heartbeat(fence).catch((err: unknown) => {
        const e = toWaymarkError(err);
        if (e instanceof TaskLost) {
          this.log('task lost; its result will be refused', { taskId: task.taskId });
          lost.abort(e);
        }
      });
    }, tool?.heartbeatMs ?? 10_000);
    let outcome: { case: 'output'; value: ReturnType<typeof toValue> } | { case: 'failure'; value: { $typeName: 'waymark.v1.TaskFailure'; name: string; message: string; nonRetryable: boolean } };
    try {
      if (!tool) throw new NonRetryableToolError(`this worker does not serve tool "${task.tool}"`);
      const parsed = tool.parse(fromValue(task.input) ?? null);
      if (!parsed.ok) throw new NonRetryableToolError(`invalid input for tool "${task.tool}": ${parsed.message}`);
      const value = await tool.execute(parsed.value, {
        idempotencyKey: task.idempotencyKey, runId: task.runId, taskId: task.taskId, attempt: task.attempt,
        deadline: task.deadline ? timestampDate(task.deadline) : new Date(8.64e15), signal: lost.signal,
        traceparent: task.traceparent || undefined,
      });
      outcome = { case: 'output', value: toValue((value ?? null) as JsonValue) };
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      const nonRetryable = (e as { nonRetryable?: unknown }).nonRetryable === true;
      outcome = { case: 'failure', value: { $typeName: 'waymark.v1.TaskFailure', name: e.name || 'Error', message: e.message, nonRetryable } };
    } finally {
      clearInterval(beat);
      if (deadline) clearTimeout(deadline);
      this.stopping.signal.removeEventListener('abort', onStop);
    }
    if (lost.signal.aborted && lost.signal.reason instanceof TaskLost) return;
    await this.complete({ ...fence, outcome } as never, task.taskId);
  }

  /** Sends a result, retrying while the server cannot be reached (the claim holds meanwhile). */
  private async complete(request: Parameters<Client<typeof WorkerService>['completeTask']>[0], taskId: string): Promise<void> {
    let backoffMs = 100;
    // Within the grace, retried until it ends; a result that comes after it gets one short try.
    const late = this.graceOver.signal.aborted;
    const signal = late ? undefined : this.graceOver.signal;
    for (let attempt = 1; attempt <= (late ? 1 : 8); attempt++) {
      try {
        await this.service.completeTask(request, signal ? { timeoutMs: 10_000, signal } : { timeoutMs: 2_000 });
        return;
      } catch (err) {
        if (signal?.aborted) {
          this.log('result not delivered within the shutdown grace; the task will be dispatched again', { taskId });
          return;
        }
        const e = toWaymarkError(err);
        if (e instanceof TaskLost) {
          this.log('result refused: the task was lost', { taskId });
          return;
        }
        if (!(e instanceof Unavailable)) {
          this.log('result failed', { taskId, err: e.message });
          return;
        }
        await sleep(backoffMs, signal ?? null);
        backoffMs = Math.min(backoffMs * 2, 2_000);
      }
    }
  }

  private log(line: string, fields: Record<string, unknown>): void {
    if (this.options.log) this.options.log(line, fields);
    else console.error(`waymark worker: ${line} ${JSON.stringify(fields)}`);
  }
}

/** A worker for the tools you declare on it; `await worker.run()` serves them. */
export function createWaymarkWorker(options: WorkerOptions = {}): WaymarkWorker {
  return new WaymarkWorker(options);
}

function isSchemaLike<T>(value: unknown): value is SchemaLike<T> {
  return typeof value === 'object' && value !== null && typeof (value as SchemaLike<T>).safeParse === 'function' && typeof (value as SchemaLike<T>).toJSONSchema === 'function';
}

function schemaJson(schema: SchemaLike<unknown> | JsonSchema): JsonValue {
  return (isSchemaLike(schema) ? JSON.parse(JSON.stringify(schema.toJSONSchema())) : schema) as JsonValue;
}

function sleep(ms: number, signal: AbortSignal | null): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
