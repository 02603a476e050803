import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { JournalStore } from '../store/store.js';
import { Sweeper } from '../sweeper/sweeper.js';
import type { Config } from './config.js';
import { openConfiguredStore } from './database.js';
import { Metrics } from './metrics.js';
import { startMetricsServer } from './metrics-server.js';
import { unusableAddress } from './port-check.js';
import { waitForStopSignal } from './stop-signal.js';

/**
 * The sweeper as the CLI builds it for any process: leader lease TTL and grace period follow
 * WAYMARK_LEASE_TTL_MS (a run's lease and the leader's expire on the same scale), the interval
 * WAYMARK_SWEEP_INTERVAL_MS, the dead-session check WAYMARK_SESSION_CHECK_MS. Shared by `waymark sweeper` and `waymark dev`.
 */
export function createSweeper(config: Config, store: JournalStore, logger: Logger, metrics: Metrics | null): Sweeper {
  const sweeper = new Sweeper({
    store,
    holder: `sweeper:${hostname()}:${process.pid}`,
    intervalMs: config.sweepIntervalMs,
    sessionCheckMs: config.sessionCheckMs,
    leaderTtlMs: config.leaseTtlMs,
    graceMs: config.leaseTtlMs,
    unroutableAfterMs: config.unroutableAfterMs,
    retention: config.retention,
    logger,
  });
  metrics?.watchSweeper(sweeper);
  return sweeper;
}

/**
 * `waymark sweeper`: the recovery loop of one store (DESIGN "Sweeper duties"). Run one Deployment
 * per store; an accidental second replica is harmless (it follows until the leader dies). On
 * SIGINT/SIGTERM it finishes its sweep and releases leadership so a standby takes over at once.
 */
export async function runSweeper(config: Config, logger: Logger): Promise<number> {
  const unusable = await unusableAddress([{ setting: 'WAYMARK_METRICS_ADDR', ...config.metricsAddr }]);
  if (unusable !== undefined) {
    process.stderr.write(`waymark sweeper: ${unusable}\n`);
    return 78;
  }
  const opened = await openConfiguredStore(config, logger, { applicationName: 'waymark-sweeper', poolSize: 4 });
  const { store, admin } = opened;
  const cleanup: Array<() => Promise<void>> = [() => opened.close()];
  const stopAll = async () => {
    for (const step of cleanup.reverse()) await step().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
  };
  try {
    const { applied } = await admin.migrate();
    if (applied.length) logger.info({ applied }, 'migrations applied');

    const metrics = new Metrics();
    cleanup.push(async () => metrics.stop());
    metrics.watchRunCounts(store, Math.max(config.sweepIntervalMs, 1_000), logger);
    const metricsServer = await startMetricsServer({ ...config.metricsAddr, metrics, logger });
    cleanup.push(() => metricsServer.close());

    const sweeper = createSweeper(config, store, logger, metrics);
    sweeper.start();
    cleanup.push(() => sweeper.stop());
    logger.info({ holder: sweeper.holder, database: opened.source, store: opened.kind, intervalMs: sweeper.intervalMs }, 'waymark sweeper started');

    const signal = await waitForStopSignal();
    logger.info({ signal }, 'stopping: finishing the sweep and releasing leadership');
    await stopAll();
    logger.info('stopped');
    return 0;
  } catch (err) {
    await stopAll();
    throw err;
  }
}
