import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import { Health, HealthCheckResponse_ServingStatus as Wire } from '../../gen/grpc/health/v1/health_pb.js';
import { abortable, streamSignal } from '../transport/shutdown-signal.js';

export type ServingStatus = 'SERVING' | 'NOT_SERVING';

/** The service name the health protocol uses for "the server as a whole" (Kubernetes startup probes). */
export const OVERALL = '';

/**
 * The serving status of each service name, as grpc.health.v1 reports it. The composition root
 * owns it: it marks services SERVING once their dependencies are ready and NOT_SERVING when the
 * process starts draining, so load balancers and Kubernetes probes stop sending traffic before
 * the server closes.
 */
export class HealthStatus {
  readonly #statuses = new Map<string, ServingStatus>();
  /** Resolved and replaced on every change, so any number of Watch streams can await the next one. */
  #changed = deferred();

  /** Starts with the overall status SERVING unless `initial` says otherwise. */
  constructor(initial: Record<string, ServingStatus> = { [OVERALL]: 'SERVING' }) {
    for (const [service, status] of Object.entries(initial)) this.#statuses.set(service, status);
  }

  set(service: string, status: ServingStatus): void {
    if (this.#statuses.get(service) === status) return;
    this.#statuses.set(service, status);
    const changed = this.#changed;
    this.#changed = deferred();
    changed.resolve();
  }

  /** undefined for a service name that was never set: the protocol answers NOT_FOUND for it. */
  get(service: string): ServingStatus | undefined {
    return this.#statuses.get(service);
  }

  entries(): [string, ServingStatus][] {
    return [...this.#statuses];
  }

  /** Resolves at the next change of any service's status. */
  nextChange(): Promise<void> {
    return this.#changed.promise;
  }
}

/**
 * grpc.health.v1.Health: Check, Watch and List. Check answers NOT_FOUND for an unknown service;
 * Watch instead sends SERVICE_UNKNOWN and keeps watching, because the service may be registered
 * later (both as the health-checking spec says).
 */
export function registerHealthService(router: ConnectRouter, health: HealthStatus): void {
  router.service(Health, {
    check(req) {
      const status = health.get(req.service);
      if (status === undefined) {
        throw new ConnectError(`no health status is kept for service "${req.service}"`, Code.NotFound);
      }
      return { status: toWire(status) };
    },

    async *watch(req, ctx) {
      const signal = streamSignal(ctx);
      let sent: Wire | undefined;
      for (;;) {
        // Take the next-change promise before reading, so a change between the two is not missed.
        const changed = health.nextChange();
        const current = toWire(health.get(req.service));
        if (current !== sent) {
          yield { status: current };
          sent = current;
        }
        try {
          await abortable(changed, signal);
        } catch (err) {
          // A draining server usually flips to NOT_SERVING just before it ends streams; make sure
          // watchers see that last status before UNAVAILABLE.
          const last = toWire(health.get(req.service));
          if (last !== sent) yield { status: last };
          throw err;
        }
      }
    },

    list() {
      return {
        statuses: Object.fromEntries(health.entries().map(([service, status]) => [service, { status: toWire(status) }])),
      };
    },
  });
}

// Promise.withResolvers arrives in Node 22; this is its Node 20 equivalent.
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function toWire(status: ServingStatus | undefined): Wire {
  switch (status) {
    case 'SERVING':
      return Wire.SERVING;
    case 'NOT_SERVING':
      return Wire.NOT_SERVING;
    case undefined:
      return Wire.SERVICE_UNKNOWN;
  }
}
