import { create } from '@bufbuild/protobuf';
import { durationFromMs, timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Duration } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import {
  ToolDeclarationSchema, WorkerService, type RemoteTask as ProtoTask, type ToolDeclaration,
} from '../../gen/waymark/v1/worker_service_pb.js';
import type { Json } from '../../journal/run.js';
import { WORKER_DEFAULTS, type RemoteTask, type RemoteToolDeclaration } from '../../engine/index.js';
import type { RouteDeps } from './route-deps.js';
import { valueFromJson } from '../convert/convert-json.js';
import { POLICY_FROM_PROTO, POLICY_TO_PROTO } from '../convert/convert-tool-policy.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { MAX_INT32, RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.WorkerService (docs/workers.md): validate, convert, one ReplicaEngine call, as the other
 * services. A result that resolves a call makes its run runnable; ReplicaEngine executes it here.
 */

/** The draft Ajv validates with; a schema naming another one has its `$schema` dropped (most keywords agree). */
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

export function workerServiceImpl(deps: RouteDeps): ServiceImpl<typeof WorkerService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);
  const ms = (c: RequestCheck, field: string, value: Duration | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    return c.runTimeout(field, value) ?? fallback;
  };
  const token = (c: RequestCheck, value: bigint): number => {
    if (value <= 0n || value > BigInt(MAX_INT32)) c.fail('fencing_token', 'must be the fencing_token PollTask returned');
    return Number(value);
  };
  const taskId = (c: RequestCheck, value: string): string => {
    const m = /^[0-9a-f-]{36}:(\d{1,10})$/i.exec(value);
    if (!m || Number(m[1]) > MAX_INT32) c.fail('task_id', 'must be a task id as PollTask returned it');
    return value;
  };

  return {
    async registerWorker(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const tools = req.tools.map((t, i) => declarationFromProto(c, t, `tools[${i}]`, ms));
      const ttlMs = req.workerTtl === undefined ? null : ms(c, 'worker_ttl', req.workerTtl, WORKER_DEFAULTS.workerTtlMs);
      c.done();
      const { workerId } = await api.workerRegister({ namespace, workerId: req.workerId, tools, ttlMs });
      return { workerId };
    },

    async pollTask(req, ctx) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const workerId = c.text('worker_id', req.workerId, { required: true, max: 128 });
      const waitMs = req.wait === undefined ? null : ms(c, 'wait', req.wait, WORKER_DEFAULTS.pollWaitMs);
      c.done();
      const task = await api.taskPoll({ namespace, workerId, tools: req.tools, queue: req.queue, waitMs, signal: ctx.signal });
      return task ? { task: taskToProto(task) } : {};
    },

    async heartbeat(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const workerId = c.text('worker_id', req.workerId, { required: true, max: 128 });
      const id = taskId(c, req.taskId);
      const t = token(c, req.fencingToken);
      c.done();
      const task = await api.taskHeartbeat({ namespace, workerId, taskId: id, token: t });
      return { claimExpiresAt: task.claimExpiresAt ? timestampFromDate(task.claimExpiresAt) : undefined };
    },

    async completeTask(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const workerId = c.text('worker_id', req.workerId, { required: true, max: 128 });
      const id = taskId(c, req.taskId);
      const t = token(c, req.fencingToken);
      let outcome: { output: Json } | { failure: { name: string; message: string; nonRetryable: boolean; retryAfterMs: number | null } } | null = null;
      if (req.outcome.case === 'output') {
        outcome = { output: c.json('output', req.outcome.value) };
      } else if (req.outcome.case === 'failure') {
        const f = req.outcome.value;
        outcome = {
          failure: {
            name: c.text('failure.name', f.name, { max: 256 }) || 'Error', message: c.text('failure.message', f.message, { max: 16_384 }),
            nonRetryable: f.nonRetryable, retryAfterMs: f.retryAfter === undefined ? null : ms(c, 'failure.retry_after', f.retryAfter, 0),
          },
        };
      } else {
        c.fail('outcome', 'set output or failure');
      }
      c.done();
      if ('output' in outcome!) c.payload('output', outcome.output);
      const r = await api.taskComplete({ namespace, workerId, taskId: id, token: t, outcome: outcome! });
      return { applied: r.applied, willRetry: r.willRetry };
    },

    async listTools(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      const tools = await api.toolList({ namespace });
      return {
        tools: tools.map((t) => ({
          declaration: declarationToProto(t.declaration, t.remote),
          remote: t.remote,
          liveWorkers: t.workers.length,
          workers: t.workers,
        })),
      };
    },
  };
}

function declarationFromProto(
  c: RequestCheck, t: ToolDeclaration, at: string,
  ms: (c: RequestCheck, field: string, value: Duration | undefined, fallback: number) => number,
): RemoteToolDeclaration {
  const policy = POLICY_FROM_PROTO[t.policy];
  if (!policy) c.fail(`${at}.policy`, `unknown policy value ${t.policy}`);
  return {
    name: t.name,
    description: c.text(`${at}.description`, t.description, { max: 4096 }),
    inputSchema: schemaFromProto(c.json(`${at}.input_schema`, t.inputSchema)),
    outputSchema: schemaFromProto(c.json(`${at}.output_schema`, t.outputSchema)),
    mutating: t.mutating ?? true,
    policy: policy ?? 'allow',
    timeoutMs: ms(c, `${at}.timeout`, t.timeout, WORKER_DEFAULTS.timeoutMs),
    heartbeatTimeoutMs: ms(c, `${at}.heartbeat_timeout`, t.heartbeatTimeout, WORKER_DEFAULTS.heartbeatTimeoutMs),
    maxAttempts: t.maxAttempts === 0 ? WORKER_DEFAULTS.maxAttempts : t.maxAttempts,
    queue: c.text(`${at}.queue`, t.queue, { max: 128 }),
  };
}

function schemaFromProto(schema: Json): Json {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  if (typeof schema.$schema === 'string' && schema.$schema !== DRAFT_2020) {
    const { $schema: _other, ...rest } = schema;
    return rest;
  }
  return schema;
}

function declarationToProto(d: RemoteToolDeclaration, remote: boolean): ToolDeclaration {
  return create(ToolDeclarationSchema, {
    name: d.name, description: d.description,
    inputSchema: d.inputSchema === null ? undefined : valueFromJson(d.inputSchema),
    outputSchema: d.outputSchema === null ? undefined : valueFromJson(d.outputSchema),
    mutating: d.mutating, policy: POLICY_TO_PROTO[d.policy],
    timeout: d.timeoutMs > 0 ? durationFromMs(d.timeoutMs) : undefined,
    heartbeatTimeout: remote ? durationFromMs(d.heartbeatTimeoutMs) : undefined,
    maxAttempts: d.maxAttempts, queue: d.queue,
  });
}

function taskToProto(task: RemoteTask & { traceparent?: string }): Omit<ProtoTask, '$typeName'> {
  return {
    taskId: task.id, runId: task.runId, tool: task.tool, input: valueFromJson(task.input), idempotencyKey: task.idempotencyKey,
    attempt: task.attempt, fencingToken: BigInt(task.attempt), deadline: timestampFromDate(task.deadlineAt),
    heartbeatTimeout: durationFromMs(task.heartbeatTimeoutMs),
    namespace: task.namespace, traceparent: task.traceparent ?? '',
  };
}

/** The served WorkerService: every route, with its errors mapped (error-mapping.ts). */
export function workerService(deps: RouteDeps): ServiceImpl<typeof WorkerService> {
  return withErrorMapping(WorkerService, workerServiceImpl(deps), deps.logger);
}

/** Registers waymark.v1.WorkerService; methods missing from `impl` answer UNIMPLEMENTED. */
export function registerWorkerService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof WorkerService>> = {}): void {
  router.service(WorkerService, { ...unimplemented(WorkerService), ...impl });
}
