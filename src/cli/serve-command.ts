import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { migrate } from '../store/postgres/migrate.js';
import { PostgresStore } from '../store/postgres/postgres-store.js';
import { startGrpcServer } from '../server/grpc-server.js';
import { HealthStatus, OVERALL, registerHealthService } from '../server/health-service.js';
import { registerReflectionService } from '../server/reflection-service.js';
import { registerRunService } from '../server/run-service.js';
import { registerSignalService } from '../server/signal-service.js';
import type { Config } from './config.js';
import { openDatabase } from './database.js';

/**
 * `waymark dev` and `waymark server`: open the database (embedded when DATABASE_URL is unset),
 * migrate, serve, and on SIGINT/SIGTERM drain in order: readiness off, server drained, store
 * closed, embedded database stopped. Resolves with the exit status.
 */
export async function runServe(config: Config, logger: Logger, options: { dev: boolean }): Promise<number> {
  const db = await openDatabase(config, logger);
  const cleanup: Array<() => Promise<void>> = [() => db.close()];
  const stopAll = async () => {
    for (const step of cleanup.reverse()) await step().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
  };
  try {
    const store = await PostgresStore.connect({
      url: db.url,
      limits: config.limits,
      applicationName: `waymark-${options.dev ? 'dev' : 'server'}`,
      logger,
    });
    cleanup.push(() => store.close());
    const { applied } = await migrate({ pool: store.pool });
    if (applied.length) logger.info({ applied }, 'migrations applied');

    const health = new HealthStatus({ [OVERALL]: 'SERVING', 'waymark.v1.RunService': 'SERVING', 'waymark.v1.SignalService': 'SERVING' });
    const server = await startGrpcServer({
      host: config.addr.host,
      port: config.addr.port,
      logger,
      maxRequestBytes: config.limits.requestBytes,
      routes: (router) => {
        registerRunService(router);
        registerSignalService(router);
        registerHealthService(router, health);
        registerReflectionService(router);
      },
    });
    cleanup.push(() => server.close(config.shutdownGraceMs));
    logger.info(
      { address: server.address, database: db.source, worker: `${hostname()}:${process.pid}` },
      `waymark ${options.dev ? 'dev' : 'server'} listening on ${server.address}`,
    );

    const signal = await waitForStopSignal();
    logger.info({ signal }, 'stopping: draining calls and releasing runs');
    for (const service of health.entries().map(([name]) => name)) health.set(service, 'NOT_SERVING');
    await stopAll();
    logger.info('stopped');
    return 0;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function waitForStopSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const on = (signal: NodeJS.Signals) => {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
      resolve(signal);
    };
    process.on('SIGINT', on);
    process.on('SIGTERM', on);
  });
}
