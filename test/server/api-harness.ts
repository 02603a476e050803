import type { McpConnector } from '../../src/engine/index.js';
import { fromJson, toJson, type DescMessage, type JsonValue, type MessageShape } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { ConnectError, createClient, createRouterTransport, type Client, type Transport } from '@connectrpc/connect';
import { pino } from 'pino';
import { expect } from 'vitest';
import { chargeBack, refund } from '../../examples/refund.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import type { ExecuteResult } from '../../src/engine/runtime/execute-result.js';
import { ReplicaEngine } from '../../src/engine/replica-engine.js';
import { Registry } from '../../src/engine/registry.js';
import type { Tool } from '../../src/engine/author/tool.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import { BadRequestSchema, ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { FlowService } from '../../src/gen/waymark/v1/flow_service_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/journal/limits.js';
import { registerRoutes, type RouteDeps } from '../../src/server/routes/register-routes.js';
import { loggingInterceptor } from '../../src/server/transport/logging-interceptor.js';
import { StreamGate } from '../../src/server/transport/stream-limit.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import type { JournalStore } from '../../src/store/store.js';
import * as fixtures from './fixtures/api-workflows.js';

export const FIXTURE_ITEMS: (Workflow | Tool)[] = [
  refund, chargeBack, fixtures.echoFlow, fixtures.dryable, fixtures.waitSignal, fixtures.ticker, fixtures.boom,
  fixtures.parentFlow, fixtures.strictFlow, fixtures.sideEffect, fixtures.lookup,
] as (Workflow | Tool)[];

export type LogLine = { level: number; msg: string } & Record<string, unknown>;

export interface ApiHarness {
  store: JournalStore;
  engine: RunEngine;
  deps: RouteDeps;
  runs: Client<typeof RunService>;
  signals: Client<typeof SignalService>;
  flows: Client<typeof FlowService>;
  /** The in-process transport the clients use (for other services' clients, e.g. a worker's). */
  transport: Transport;
  logs: LogLine[];
  /** Resolves with the next execution of `runId` that ends with one of `outcomes`. */
  executionEnded(runId: string, outcomes?: ExecuteResult['outcome'][]): Promise<ExecuteResult>;
}

/**
 * The API served in process (createRouterTransport) over a MemoryStore, as the composition root
 * wires it: engine, the engine's API (with its inline executions), stream gate, error mapping, the
 * logging interceptor. No
 * executor runs: a run only executes where the API executes it (StartRun with wait, after a signal
 * or a decision).
 */
export function apiHarness(options: {
  store?: JournalStore; limits?: Partial<Limits>; items?: (Workflow | Tool)[]; streams?: number; shutdownSignal?: AbortSignal;
  /** A registry built by the test (e.g. with an agent runtime); `items` is then ignored. */
  registry?: Registry;
  /** MCP servers' connector (docs/mcp.md); absent: runs cannot call MCP tools. */
  mcp?: McpConnector;
} = {}): ApiHarness {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const store = options.store ?? new MemoryStore({ limits });
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) });
  const registry = options.registry ?? new Registry().register(...(options.items ?? FIXTURE_ITEMS));
  const engine = new RunEngine({ store, registry, holder: 'replica-a', leaseTtlMs: 30_000, logger, ...(options.mcp ? { mcp: options.mcp } : {}) });
  const deps: RouteDeps = {
    api: new ReplicaEngine({ engine, logger, followPollMs: 50 }), logger, limits, defaultNamespace: 'default', streams: new StreamGate(options.streams ?? 100),
  };
  const transport = createRouterTransport((router) => registerRoutes(router, deps), {
    router: { interceptors: [loggingInterceptor(logger)], ...(options.shutdownSignal ? { shutdownSignal: options.shutdownSignal } : {}) },
  });
  return {
    store, engine, deps, logs, transport,
    runs: createClient(RunService, transport),
    signals: createClient(SignalService, transport),
    flows: createClient(FlowService, transport),
    executionEnded(runId, outcomes = ['succeeded', 'failed', 'suspended']) {
      return new Promise((resolve) => {
        const on = (result: ExecuteResult) => {
          if (result.runId !== runId || !outcomes.includes(result.outcome)) return;
          engine.events.off('execution-ended', on);
          resolve(result);
        };
        engine.events.on('execution-ended', on);
      });
    },
  };
}

/** The ConnectError a call fails with (the test fails if it succeeds). */
export async function failure(call: Promise<unknown> | AsyncIterable<unknown>): Promise<ConnectError> {
  try {
    if (Symbol.asyncIterator in call) {
      for await (const _ of call) {
        // drain until the error
      }
    } else {
      await call;
    }
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    return err as ConnectError;
  }
  throw new Error('the call succeeded; a failure was expected');
}

export function detail<D extends DescMessage>(err: ConnectError, desc: D): MessageShape<D> | undefined {
  return err.findDetails(desc)[0];
}

/** The ErrorInfo reason and the BadRequest fields of an error, for compact assertions. */
export function shapeOf(err: ConnectError): { code: number; reason: string | undefined; fields: string[] } {
  return {
    code: err.code,
    reason: detail(err, ErrorInfoSchema)?.reason,
    fields: detail(err, BadRequestSchema)?.fieldViolations.map((v) => v.field) ?? [],
  };
}

/** Everything a MemoryStore holds, to prove a refused call wrote nothing. */
export async function snapshot(store: JournalStore, namespace = 'default'): Promise<unknown> {
  const { runs } = await store.runList({ namespace, pageSize: 1000 });
  return Promise.all(runs.map(async (run) => ({
    run, journal: await store.journalList({ runId: run.id }), inbox: await store.signalInboxList({ runId: run.id }),
  })));
}

/** A google.protobuf.Value of plain JSON. */
export function json(value: JsonValue): Value {
  return fromJson(ValueSchema, value);
}

/** The plain JSON of a google.protobuf.Value (undefined when unset). */
export function plain(value: Value | undefined): JsonValue | undefined {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}
