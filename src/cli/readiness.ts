import type { Logger } from 'pino';
import { OVERALL, type HealthStatus } from '../server/routes/health-service.js';
import type { StoreAdmin } from '../store/store-kind.js';

/** The grpc.health.v1 service name Kubernetes readiness probes ask for (k8s/base/server-deployment.yaml). */
export const READINESS = 'readiness';
/** The service name liveness and startup probes ask for: the process answers; never depends on Postgres. */
export const LIVENESS = 'liveness';

export const READINESS_DEFAULTS = {
  /** How often the database and schema are checked again. */
  intervalMs: 5_000,
  /** A check that takes longer counts as "database does not answer". */
  timeoutMs: 2_000,
} as const;

export interface ReadinessOptions {
  health: HealthStatus;
  /**
   * The store's admin side (openStore): its ping and schema status. It answers on resources of its
   * own, so a busy store cannot make readiness flap under load.
   */
  admin: Pick<StoreAdmin, 'ping' | 'schemaStatus'>;
  logger: Logger;
  intervalMs?: number;
  timeoutMs?: number;
}

export interface ReadinessReport {
  ready: boolean;
  /** Why not ready, in words an operator can act on; absent when ready. */
  reason?: string;
}

export interface Readiness {
  /** Checks now, sets the health statuses, and resolves with the outcome. Never rejects. */
  checkNow(): Promise<ReadinessReport>;
  /**
   * The process is stopping: readiness and the overall status go NOT_SERVING for good, so
   * Kubernetes takes the pod out of its Services before the server closes. Liveness stays SERVING.
   */
  drain(): void;
  /** Stops the periodic check and waits for one in flight. */
  stop(): Promise<void>;
}

/**
 * Keeps the `readiness` and overall (`""`) health statuses true to the process's ability to serve:
 * SERVING only when the store answers its admin's ping and every migration this build ships is
 * applied, re-checked every `intervalMs`; NOT_SERVING from the start until the first check passes
 * and for good once `drain()` is called. `liveness` is set SERVING and left alone, so a database
 * outage takes replicas out of rotation instead of restarting them. Test: test/cli/readiness.test.ts.
 */
export function startReadiness(options: ReadinessOptions): Readiness {
  const { health, admin, logger } = options;
  const intervalMs = positive('intervalMs', options.intervalMs ?? READINESS_DEFAULTS.intervalMs);
  const timeoutMs = positive('timeoutMs', options.timeoutMs ?? READINESS_DEFAULTS.timeoutMs);
  let draining = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<ReadinessReport> | undefined;
  let lastReason: string | undefined | null = null; // null: nothing logged yet

  const publish = (report: ReadinessReport) => {
    const status = report.ready && !draining ? 'SERVING' : 'NOT_SERVING';
    health.set(READINESS, status);
    health.set(OVERALL, status);
    if (draining || report.reason === lastReason) return;
    lastReason = report.reason;
    if (report.ready) logger.info('ready: database answers and the schema is up to date');
    else logger.warn({ reason: report.reason }, 'not ready');
  };

  const check = async (): Promise<ReadinessReport> => {
    if (draining) return { ready: false, reason: 'draining' };
    let report: ReadinessReport;
    try {
      report = await withTimeout(probe(admin), timeoutMs);
    } catch (err) {
      report = { ready: false, reason: `database does not answer: ${err instanceof Error ? err.message : String(err)}` };
    }
    publish(report);
    return draining ? { ready: false, reason: 'draining' } : report;
  };

  const checkNow = (): Promise<ReadinessReport> => {
    // One check at a time: a slow database must not pile probes up.
    inFlight ??= check().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };

  const schedule = () => {
    if (stopped || draining) return;
    timer = setTimeout(() => {
      void checkNow().then(schedule);
    }, intervalMs);
    timer.unref();
  };

  health.set(LIVENESS, 'SERVING');
  health.set(READINESS, 'NOT_SERVING');
  health.set(OVERALL, 'NOT_SERVING');
  void checkNow().then(schedule);

  return {
    checkNow,
    drain() {
      draining = true;
      clearTimeout(timer);
      health.set(READINESS, 'NOT_SERVING');
      health.set(OVERALL, 'NOT_SERVING');
      logger.info('not ready: draining');
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await inFlight;
    },
  };
}

async function probe(admin: ReadinessOptions['admin']): Promise<ReadinessReport> {
  await admin.ping();
  const schema = await admin.schemaStatus();
  if (!schema.ok) {
    return { ready: false, reason: `migrations pending: ${schema.pending.join(', ')} (run \`waymark migrate\`)` };
  }
  // Unknown (newer) migrations are fine: during a rolling upgrade the new release migrates first
  // and old replicas keep serving, as forward-only, additive migrations allow.
  return { ready: true };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function positive(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) throw new RangeError(`readiness ${name} must be a whole number of milliseconds > 0, got ${value}`);
  return value;
}
