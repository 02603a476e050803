import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { createAgentRuntime } from '../agent/agent-runtime.js';
import { DefinitionError } from '../engine/index.js';
import { ReplicaEngine } from '../engine/index.js';
import type { Registry } from '../engine/index.js';
import { StreamTokens } from '../engine/index.js';
import { API_SERVICES, registerRoutes } from '../server/routes/register-routes.js';
import { publicOnlyAuth, type AuthOptions } from '../server/auth/auth.js';
import { startGrpcServer } from '../server/transport/grpc-server.js';
import { HealthStatus, OVERALL, registerHealthService } from '../server/routes/health-service.js';
import { registerReflectionService } from '../server/routes/reflection-service.js';
import { registerWebhookService, webhookService } from '../server/routes/webhook-service.js';
import { loadConsoleAssets } from '../server/transport/console-assets.js';
import { consoleBuildDir } from './console-build.js';
import { WebhookApi } from '../webhooks/webhook-api.js';
import { StreamGate } from '../server/transport/stream-limit.js';
import type { Config } from './config.js';
import { openConfiguredStore } from './database.js';
import { registerExamples } from './examples.js';
import { ensureLocalAdminKey, localStreamTokenSecret } from './local-credentials.js';
import { LIVENESS, startReadiness } from './readiness.js';
import { loadRegistry, startReplicaServices } from './replica-services.js';
import { waitForStopSignal } from './stop-signal.js';
import { unusableAddress } from './port-check.js';
import { startTracing } from './tracing.js';
import { RunTracing } from './execution-tracing.js';

/** A --workflows module that cannot be loaded, or an address that cannot be listened on, is a configuration error (sysexits EX_CONFIG, as a bad setting). */
const EXIT_WORKFLOWS_MODULE = 78;

/**
 * `waymark dev` and `waymark server`: validate the model settings (a bad one throws
 * ModelConfigError, exit 78, before the database is touched), load the --workflows module (one
 * line and exit 78 when it cannot be loaded, still before the database), open the store (cli/database.ts:
 * DATABASE_URL's kind, or an embedded PostgreSQL when it is unset), migrate it, build the replica services (registry with the user's module and, in dev,
 * the examples; engine), serve the API and log "listening", and only then start the executor (and
 * the sweeper in dev), so a process that crashes executing has logged its address. On SIGINT or
 * SIGTERM it drains in order: health NOT_SERVING; server closed (streams end UNAVAILABLE at once,
 * calls get the grace period); runs still executing get what is left of the grace period, are then
 * aborted, and the leases of those that settled within WAYMARK_SHUTDOWN_SETTLE_MS are released so
 * another replica continues them (the others expire); store closed; embedded database stopped.
 * Resolves with the exit status.
 */
export async function runServe(config: Config, logger: Logger, options: { dev: boolean }): Promise<number> {
  // Every address it will listen on, before the database is started or anything is written.
  const unusable = await unusableAddress([
    { setting: 'WAYMARK_ADDR', ...config.addr }, { setting: 'WAYMARK_METRICS_ADDR', ...config.metricsAddr },
    ...(config.healthAddr ? [{ setting: 'WAYMARK_HEALTH_ADDR', ...config.healthAddr }] : []),
  ]);
  if (unusable !== undefined) {
    process.stderr.write(`waymark ${options.dev ? 'dev' : 'server'}: ${unusable}\n`);
    return EXIT_WORKFLOWS_MODULE;
  }
  // ctx.agent's runtime (models from the environment; the offline scripted model without a key).
  const agent = createAgentRuntime({ logger });
  // The user's --workflows module, before the database: a module that cannot be loaded is one
  // line naming its file and line, exit 78, with nothing started (docs/workflows.md).
  let registry: Registry;
  try {
    registry = await loadRegistry(config, logger, agent);
  } catch (err) {
    if (!(err instanceof DefinitionError)) throw err;
    process.stderr.write(`waymark: ${err.message}\n`);
    return EXIT_WORKFLOWS_MODULE;
  }
  // Before the store opens, so its driver is patched before the first statement (cli/tracing.ts).
  const tracing = await startTracing(logger);
  // A run's spans (attempts, effects, remote tasks), in the run's own trace (cli/execution-tracing.ts).
  const runTracing = tracing ? new RunTracing() : null;
  const opened = await openConfiguredStore(config, logger, { applicationName: `waymark-${options.dev ? 'dev' : 'server'}` });
  const { store, admin } = opened;
  const cleanup: Array<() => Promise<unknown>> = [() => opened.close()];
  const stopAll = async () => {
    for (const step of cleanup.reverse()) await step().catch((err: unknown) => logger.error({ err }, 'shutdown step failed'));
    await tracing?.shutdown();
  };
  // One grace period for the whole drain, measured from the stop signal (Kubernetes'
  // terminationGracePeriodSeconds bounds it all, not each step).
  let deadline = Number.POSITIVE_INFINITY;
  const remaining = () => Math.max(0, Math.min(config.shutdownGraceMs, deadline - Date.now()));
  try {
    const { applied } = await admin.migrate();
    if (applied.length) logger.info({ applied }, 'migrations applied');
    const health = new HealthStatus({ [OVERALL]: 'NOT_SERVING', ...Object.fromEntries(API_SERVICES.map((name) => [name, 'SERVING' as const])) });
    // Readiness (and the overall status) follow the store and its schema; liveness never does.
    // The admin side answers on a connection of its own, so a busy store pool cannot make it flap.
    const readiness = startReadiness({ health, admin, logger });
    cleanup.push(() => readiness.stop());
    // Checked once before anything starts, so the server is ready the moment it listens (and the
    // executor starts no earlier before that than it did without the check).
    await readiness.checkNow();
    // RunEngine, executor loop, metrics, and in dev the sweeper (started once the server listens);
    // stopped after the server drains. The examples are registered here, before anything is claimed.
    const services = await startReplicaServices({
      config, store, logger, dev: options.dev, registry, tracer: runTracing,
      ...(options.dev ? {
        extend: async (registry) => {
          const examples = await registerExamples(registry, logger);
          logger.info({ workflows: examples }, 'examples registered');
        },
      } : {}),
    });
    runTracing?.watch(services.engine);
    // What the API calls; it executes the runs StartRun (wait), signals and decisions make runnable.
    const engineApi = new ReplicaEngine({ engine: services.engine, logger, settleMs: config.shutdownSettleMs, keyCacheMs: config.auth.cacheMs });
    cleanup.push(() => Promise.all([services.stop(remaining()), engineApi.stop({ graceMs: remaining() })]));

    // Stream tokens need one secret on every replica; dev keeps a generated one in its data dir.
    const secrets = config.auth.streamTokenSecrets ?? (options.dev ? [await localStreamTokenSecret(config.dataDir)] : undefined);
    const streamTokens = secrets ? new StreamTokens({ secrets }) : null;
    const api = {
      api: engineApi, logger, limits: config.limits, defaultNamespace: config.namespace,
      streams: new StreamGate(config.limits.streamsPerReplica), streamTokens,
    };
    let auth: AuthOptions | 'off' = 'off';
    if (config.auth.enabled) {
      auth = {
        keys: engineApi.keys, streamTokens, reflectionPublic: config.auth.reflectionPublic, defaultNamespace: config.namespace,
        runVisible: (p) => engineApi.runVisible(p),
      };
      if (options.dev) await ensureLocalAdminKey({ dataDir: config.dataDir, keys: engineApi.keys, logger });
    } else {
      logger.warn({ address: `${config.addr.host}:${config.addr.port}` }, 'authentication is off (WAYMARK_AUTH=off): every call on this loopback address is served without a key');
    }
    const server = await startGrpcServer({
      host: config.addr.host,
      port: config.addr.port,
      logger,
      maxRequestBytes: config.limits.requestBytes,
      sessionLimits: config.http2,
      clientLimits: config.clients,
      tls: config.tls,
      auth,
      tracing: tracing !== null,
      corsOrigins: config.auth.corsOrigins,
      console: config.console ? loadConsoleAssets(consoleBuildDir()) : undefined,
      routes: (router) => {
        registerRoutes(router, api);
        registerWebhookService(router, webhookService({
          api: new WebhookApi(store, logger), logger, defaultNamespace: config.namespace, allowPrivate: config.webhooks.allowPrivate,
        }));
        registerHealthService(router, health);
        registerReflectionService(router);
      },
    });
    cleanup.push(() => server.close(remaining()));
    if (config.healthAddr) {
      // Plaintext and health only: Kubernetes' gRPC probes cannot speak TLS to the API port.
      const probes = await startGrpcServer({
        host: config.healthAddr.host, port: config.healthAddr.port, logger: logger.child({ listener: 'health' }),
        maxRequestBytes: 64 * 1024, sessionLimits: config.http2, routes: (router) => registerHealthService(router, health),
        // Health checks are public whatever WAYMARK_AUTH says; nothing else is served here.
        auth: publicOnlyAuth(config.namespace),
      });
      cleanup.push(() => probes.close(remaining()));
      logger.info({ address: probes.address }, `health listening on ${probes.address}`);
    }
    // Listened for before "listening" is logged: a supervisor may signal as soon as it reads it.
    const stopSignal = waitForStopSignal();
    // What this replica serves is recorded before "listening" too: a client that starts a run the
    // moment it reads that line must find the workflow (the executor starts right after).
    await services.announce();
    logger.info(
      { address: server.address, tls: config.tls !== undefined, auth: config.auth.enabled ? 'on' : 'off', database: opened.source, store: opened.kind, holder: services.engine.holder, host: hostname(), appendsInFlight: config.appendsInFlight, resumeCacheEntries: services.engine.resumes.maxEntries, resumeCacheBytes: services.engine.resumes.maxBytes, clientLimits: config.clients },
      `waymark ${options.dev ? 'dev' : 'server'} listening on ${server.address}`,
    );
    if (config.console) logger.info({ url: `${server.url}/console/` }, `web console on ${server.url}/console/`);
    await services.start();

    const signal = await stopSignal;
    deadline = Date.now() + config.shutdownGraceMs;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, 'stopping: draining calls and releasing runs');
    // Out of every Service at once; liveness stays SERVING so Kubernetes does not restart a draining pod.
    readiness.drain();
    for (const [service] of health.entries()) if (service !== LIVENESS) health.set(service, 'NOT_SERVING');
    await stopAll();
    logger.info('stopped');
    return 0;
  } catch (err) {
    await stopAll();
    throw err;
  }
}
