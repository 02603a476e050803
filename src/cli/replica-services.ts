import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { WaymarkAgentRuntime } from '../agent/agent-runtime.js';
import { SdkMcpConnector } from '../mcp/sdk-mcp-connector.js';
import { RunEngine } from '../engine/index.js';
import type { EffectTracer } from '../engine/index.js';
import { Executor } from '../engine/index.js';
import { DueTimers } from '../engine/index.js';
import { ReplicaPresence } from '../engine/index.js';
import { Registry } from '../engine/index.js';
import { PayloadSealer } from '../engine/index.js';
// The package root's loader: the user's module imports that root too (engine/user-module.ts).
import { loadUserModule } from '../index.js';
import { instrumentedStore } from '../store/instrumented-store.js';
import type { JournalStore } from '../store/store.js';
import type { Sweeper } from '../sweeper/sweeper.js';
import type { Config } from './config.js';
import { Metrics } from './metrics.js';
import { startMetricsServer, type MetricsServer } from './metrics-server.js';
import { createSweeper } from './sweeper-command.js';
import { WebhookDispatcher, type WebhookTracer } from '../webhooks/dispatcher.js';

export interface ReplicaServices {
  registry: Registry;
  /** The engine the API and the executor share; it writes through the instrumented store. */
  engine: RunEngine;
  executor: Executor;
  /** The deadlines of runs parked here, due soon, fired on time (null with WAYMARK_TIMER_HORIZON_MS=0). */
  timers: DueTimers | null;
  /** `waymark dev` only: the in-process sweeper. */
  sweeper: Sweeper | null;
  metrics: Metrics;
  metricsServer: MetricsServer | null;
  /** Delivers the outbox's webhooks (every server runs one; claims are shared through the store). */
  webhooks: WebhookDispatcher;
  /**
   * Opens the lease session and records what this replica serves (its presence), claiming
   * nothing: called before the server logs "listening", so a client that starts a run as soon as it
   * reads that line finds the workflow served. Idempotent; start() calls it too.
   */
  announce(): Promise<void>;
  /**
   * Starts claiming runs: the executor loop and, in dev, the sweeper. Called once the API listens,
   * so a process that crashes while executing has always logged its address first.
   */
  start(): Promise<void>;
  /**
   * Stops in order: the sweeper (releasing leadership), then the executor (in-flight runs get
   * `graceMs`, then their leases are released so another replica continues them at once).
   */
  stop(graceMs: number): Promise<void>;
}

/**
 * The registry of `waymark server` and `waymark dev`: the built-in tools, ctx.agent's runtime
 * (built, and its model settings validated, before the database is opened) and the user's
 * --workflows module. Loaded before the database is opened, so a module that cannot be loaded
 * stops the process at once with one line (a DefinitionError) instead of after a database start.
 */
export async function loadRegistry(config: Config, logger: Logger, agent: WaymarkAgentRuntime): Promise<Registry> {
  const registry = new Registry({ agent, sealer: config.secretsKeys ? new PayloadSealer(config.secretsKeys) : null });
  if (config.workflowsPath) {
    const loaded = await loadUserModule(config.workflowsPath, registry);
    logger.info({ path: loaded.path, workflows: loaded.workflows, tools: loaded.tools }, 'workflows module loaded');
  }
  return registry;
}

/**
 * The background half of `waymark server` and `waymark dev`: the engine over `registry`, the
 * executor loop, the sweeper in dev, and metrics.
 * Nothing is claimed until `start()`: the executor and the sweeper are built here but not started.
 */
export async function startReplicaServices(params: {
  config: Config; store: JournalStore; logger: Logger; dev: boolean;
  /** The workflows and tools, with the user's --workflows module already loaded (loadRegistry). */
  registry: Registry;
  /** Registers more workflows and tools after the user's module, before any run is claimed (dev: the examples). */
  extend?: (registry: Registry) => Promise<void>;
  /** Spans per effect and remote task (cli/execution-tracing.ts); null or absent: tracing is off. */
  tracer?: (EffectTracer & WebhookTracer) | null;
}): Promise<ReplicaServices> {
  const { config, store, logger, registry } = params;
  await params.extend?.(registry);
  const metrics = new Metrics();
  const holder = `${hostname()}:${process.pid}`;
  // MCP servers registered in the store (docs/mcp.md); connections open on a run's first call.
  const mcp = new SdkMcpConnector({ store, logger: logger.child({ component: 'mcp' }), replica: holder });
  const engine = new RunEngine({
    store: instrumentedStore(store, metrics.observeStoreCall), registry, holder, leaseTtlMs: config.leaseTtlMs, logger, mcp,
    resumeCache: { maxEntries: config.resumeCacheEntries, maxBytes: config.resumeCacheBytes }, ...(params.tracer ? { tracer: params.tracer } : {}),
  });
  metrics.watchEngine(engine);
  metrics.watchRunCounts(store, Math.max(config.sweepIntervalMs, 1_000), logger);
  const metricsServer = await startMetricsServer({ ...config.metricsAddr, metrics, logger });

  const executor = new Executor({ driver: engine.driver, store, holder, logger, concurrency: config.executorConcurrency, settleMs: config.shutdownSettleMs });
  const presence = new ReplicaPresence({ store, replicaId: holder, workflows: engine.serves(), ttlMs: config.replicaTtlMs, logger });
  metrics.watchExecutor(executor);
  // A timer this replica fires makes its run PENDING: the store's NOTIFY wakes every executor, and
  // this one is woken at once, so the run usually continues here without waiting for the notification.
  const timers = config.timerHorizonMs > 0 ? new DueTimers({ driver: engine.driver, horizonMs: config.timerHorizonMs, logger }) : null;
  timers?.events.on('fired', ({ applied }) => {
    if (applied) executor.wake();
  });
  const sweeper = params.dev ? createSweeper(config, store, logger, metrics) : null;
  const webhooks = new WebhookDispatcher(store, logger.child({ component: 'webhooks' }), config.webhooks, params.tracer ?? null);
  let announced: Promise<void> | null = null;
  let executorStarted = false;
  const announce = (): Promise<void> => {
    announced ??= (async () => {
      // Before anything is claimed: from here on this process's death ends its leases at once
      // (docs/recovery.md "Dead sessions"), not at their expiry.
      await store.leaseSessionOpen({ holder });
      await presence.start();
    })();
    return announced;
  };

  return {
    registry, engine, executor, timers, sweeper, metrics, metricsServer, webhooks, announce,
    async start() {
      await announce();
      if (executorStarted) return;
      executorStarted = true;
      await executor.start();
      timers?.start();
      sweeper?.start();
      webhooks.start();
    },
    async stop(graceMs) {
      await sweeper?.stop();
      await webhooks.stop();
      if (announced) {
        await presence.stop();
        if (executorStarted) {
          await timers?.stop();
          await executor.stop({ graceMs });
        }
        await store.leaseSessionClose({ holder });
      }
      await mcp.close();
      metrics.stop();
      await metricsServer?.close();
    },
  };
}
