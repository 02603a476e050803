import { EventEmitter } from 'node:events';
import { status as GrpcStatus, type Client, type ServiceError } from '@grpc/grpc-js';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { Health, HealthCheckResponse_ServingStatus as Serving } from '../../src/gen/grpc/health/v1/health_pb.js';
import { RunStatus, type Run } from '../../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { grpcJsClient, serverStreamCall, unaryCall } from '../server/grpc-js-client.js';
import type { WaymarkProcess } from '../support/waymark-process.js';

/*
 * The clients of the topology test: what a gRPC client behind a headless Service with round_robin
 * does. Calls go to ready replicas in turn; UNAVAILABLE (a draining or vanished replica) is retried
 * on the next ready one with the same idempotency key or stream cursor; any other error is a
 * failure the test reports.
 */

export class Replica {
  ready = false;
  /** Calls and streams this client has open on the replica. */
  outstanding = 0;
  /** Calls the replica answered successfully. */
  served = 0;
  readonly client: Client;
  constructor(readonly name: string, readonly process: WaymarkProcess, readonly address: string) {
    this.client = grpcJsClient(address);
  }
}

export const TERMINAL = new Set([RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED]);

export interface LoadReport {
  /** Calls answered UNAVAILABLE and retried elsewhere. */
  retried: number;
  /** Anything else: each a line naming the call and the status. */
  failures: string[];
}

export class Router extends EventEmitter<{ outstanding: [Replica] }> {
  readonly replicas: Replica[] = [];
  readonly report: LoadReport = { retried: 0, failures: [] };
  #next = 0;

  add(replica: Replica): void {
    this.replicas.push(replica);
  }

  pick(): Replica {
    const ready = this.replicas.filter((r) => r.ready);
    if (ready.length === 0) throw new Error('no ready replica');
    return ready[this.#next++ % ready.length]!;
  }

  /** Runs `call` on ready replicas until it succeeds, retrying only UNAVAILABLE. */
  async withRetry<T>(what: string, call: (r: Replica) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const replica = this.pick();
      replica.outstanding++;
      this.emit('outstanding', replica);
      try {
        const result = await call(replica);
        replica.served++;
        return result;
      } catch (err) {
        const code = (err as Partial<ServiceError>).code;
        if (code === GrpcStatus.UNAVAILABLE && attempt < 25) {
          this.report.retried++;
          continue;
        }
        this.report.failures.push(`${what} on ${replica.name}: ${code === undefined ? String(err) : `${GrpcStatus[code]}: ${(err as ServiceError).details}`}`);
        throw err;
      } finally {
        replica.outstanding--;
      }
    }
  }

  /** Resolves once `predicate` holds, checked whenever a call opens (an event, not a sleep). */
  until(predicate: () => boolean): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve) => {
      const on = () => {
        if (predicate()) {
          this.off('outstanding', on);
          resolve();
        }
      };
      this.on('outstanding', on);
    });
  }
}

export const json = (value: JsonValue) => fromJson(ValueSchema, value);

export function startRun(router: Router, request: { workflow: string; input: JsonValue; idempotencyKey: string; wait: boolean }): Promise<Run> {
  return router.withRetry(`StartRun ${request.idempotencyKey}`, async (r) => {
    const res = await unaryCall(r.client, RunService.method.startRun, { ...request, input: json(request.input) }, 60_000);
    return res.run!;
  });
}

/**
 * Follows a run's events until its terminal status, reconnecting from the last seq on UNAVAILABLE
 * (the stream of a draining replica ends so), and resolves with the run as GetRun reports it.
 */
export async function awaitRunEnd(router: Router, runId: string): Promise<Run> {
  let afterSeq: bigint | undefined;
  await router.withRetry(`StreamRunEvents ${runId}`, async (r) => {
    const stream = serverStreamCall(r.client, RunService.method.streamRunEvents, { runId, ...(afterSeq === undefined ? {} : { afterSeq }) });
    try {
      for (;;) {
        const { event } = await stream.next().catch(async (err: Error) => {
          const status = await stream.status;
          if (status.code === GrpcStatus.OK) return { event: undefined }; // ended after the terminal event
          throw Object.assign(err, { code: status.code, details: status.details });
        });
        if (!event) return;
        afterSeq = event.seq;
        if (event.body.case === 'statusChanged' && TERMINAL.has(event.body.value.status)) return;
      }
    } finally {
      stream.call.cancel();
    }
  });
  return router.withRetry(`GetRun ${runId}`, async (r) => (await unaryCall(r.client, RunService.method.getRun, { runId })).run!);
}

/** The kubelet's gRPC probe: one Check of `service`. */
export async function probe(replica: Replica, service: string): Promise<Serving> {
  return (await unaryCall(replica.client, Health.method.check, { service }, 5_000)).status;
}

/**
 * Watches `service` on a replica and resolves when it reports `wanted`; also records every status
 * seen, so a test can tell the replica went NOT_SERVING while it drained.
 */
export function watchHealth(replica: Replica, service: string): { seen: Serving[]; until(wanted: Serving): Promise<void>; close(): void } {
  const stream = serverStreamCall(replica.client, Health.method.watch, { service });
  const seen: Serving[] = [];
  const listeners = new Set<() => void>();
  stream.call.on('data', (m: { status: Serving }) => {
    seen.push(m.status);
    for (const l of listeners) l();
  });
  return {
    seen,
    until(wanted) {
      if (seen.includes(wanted)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (seen.includes(wanted)) {
            listeners.delete(check);
            resolve();
          }
        };
        listeners.add(check);
        void stream.status.then((s) => {
          if (listeners.has(check)) reject(new Error(`health watch on ${replica.name} ended (${s.code}) before ${Serving[wanted]}`));
        });
      });
    },
    close: () => stream.call.cancel(),
  };
}
