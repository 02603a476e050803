import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Logger } from 'pino';
import type { RunEngine } from '../engine/index.js';
import type { Executor } from '../engine/index.js';
import { journalUsage } from '../journal/limits.js';
import { RUN_STATUSES } from '../journal/run.js';
import type { StoreCallObserver } from '../store/instrumented-store.js';
import type { JournalStore } from '../store/store.js';
import type { Sweeper } from '../sweeper/sweeper.js';

/*
 * What a waymark process exposes on WAYMARK_METRICS_ADDR (docs/recovery.md "Metrics"). Each loop
 * already emits events for tests; this file only turns them into Prometheus series, so no metrics
 * code lives in the engine, the sweeper or the stores.
 */

export class Metrics {
  readonly registry = new Registry();
  private readonly runs: Gauge<'status'>;
  private readonly claims: Counter;
  private readonly executions: Counter<'outcome'>;
  private readonly leaseLosses: Counter;
  private readonly recoveries: Counter<'result' | 'kind'>;
  private readonly sweeperActions: Counter<'duty'>;
  private readonly sweepDuration: Histogram;
  private readonly sweeperLeader: Gauge;
  private readonly unroutable: Gauge;
  private readonly timedOut: Counter<'by'>;
  private readonly appendDuration: Histogram<'method' | 'outcome'>;
  private readonly journalNearLimit: Counter<'workflow'>;
  private readonly timers: NodeJS.Timeout[] = [];

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'waymark_' });
    this.runs = new Gauge({ name: 'waymark_runs', help: 'Runs in each status (a periodic count over the whole store)', labelNames: ['status'], registers });
    this.claims = new Counter({ name: 'waymark_runs_claimed_total', help: 'PENDING runs claimed by this process\'s executor', registers });
    this.executions = new Counter({ name: 'waymark_executions_total', help: 'Executions ended on this process, by outcome', labelNames: ['outcome'], registers });
    this.leaseLosses = new Counter({ name: 'waymark_lease_losses_total', help: 'Executions stopped here because another worker took the run\'s lease', registers });
    this.recoveries = new Counter({
      name: 'waymark_recoveries_total', labelNames: ['result', 'kind'], registers,
      help: 'Leases this sweeper took back, by kind (expired_lease: the lease expired; dead_session: its holder\'s lease session ended): made claimable (recovered) or failed as Interrupted',
    });
    this.sweeperActions = new Counter({ name: 'waymark_sweeper_actions_total', help: 'Sweeper duties performed, by duty', labelNames: ['duty'], registers });
    this.sweepDuration = new Histogram({
      name: 'waymark_sweep_duration_seconds', help: 'Duration of sweeps by the leader', registers,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    });
    this.sweeperLeader = new Gauge({ name: 'waymark_sweeper_leader', help: '1 while this process holds the sweeper leader lease', registers });
    this.unroutable = new Gauge({
      name: 'waymark_runs_unroutable', registers,
      help: 'PENDING runs (past WAYMARK_UNROUTABLE_AFTER_MS) that no live replica can execute: none serves their workflow or pinned digest (leader sweeper only)',
    });
    this.timedOut = new Counter({
      name: 'waymark_runs_timed_out_total', labelNames: ['by'], registers,
      help: 'Runs failed with RunTimedOutError (their run timeout passed): by the leader sweeper (by="sweeper") or by the replica executing the run at its deadline (by="replica")',
    });
    this.appendDuration = new Histogram({
      name: 'waymark_journal_append_duration_seconds', help: 'Latency of journal writes (appends, status entries, resolutions)',
      labelNames: ['method', 'outcome'], registers,
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.journalNearLimit = new Counter({
      name: 'waymark_journal_near_limit_total', labelNames: ['workflow'], registers,
      help: 'Executions that ended here with their run\'s journal at 80 % or more of WAYMARK_MAX_JOURNAL_ENTRIES or WAYMARK_MAX_JOURNAL_BYTES (continue as new before the limit fails the run)',
    });
  }

  /** For instrumentedStore: observes journal write latency. */
  readonly observeStoreCall: StoreCallObserver = ({ method, seconds, ok }) => {
    this.appendDuration.observe({ method, outcome: ok ? 'ok' : 'error' }, seconds);
  };

  watchEngine(engine: RunEngine): void {
    engine.events.on('execution-ended', (result) => {
      this.executions.inc({ outcome: result.outcome });
      if (result.outcome === 'lease_lost') this.leaseLosses.inc();
      if (result.outcome === 'failed' && (result.error as { reason?: unknown } | null)?.reason === 'run_timed_out') this.timedOut.inc({ by: 'replica' });
      if (result.run && journalUsage(result.run, engine.store.limits).near) this.journalNearLimit.inc({ workflow: result.run.workflowName });
    });
  }

  watchExecutor(executor: Executor): void {
    executor.events.on('claimed', () => this.claims.inc());
  }

  watchSweeper(sweeper: Sweeper): void {
    this.sweeperLeader.set(0);
    sweeper.events.on('elected', () => this.sweeperLeader.set(1));
    sweeper.events.on('demoted', () => this.sweeperLeader.set(0));
    sweeper.events.on('stopped', () => this.sweeperLeader.set(0));
    sweeper.events.on('reclaimed', (r) => {
      this.recoveries.inc({ result: 'recovered', kind: 'dead_session' }, r.recovered.length);
      this.recoveries.inc({ result: 'failed', kind: 'dead_session' }, r.failed.length);
    });
    sweeper.events.on('sweep', (r) => {
      if (!r.leader) return;
      this.sweepDuration.observe(r.durationMs / 1000);
      this.unroutable.set(r.unroutable.length);
      for (const [kind, counts] of Object.entries(r.byKind)) {
        this.recoveries.inc({ result: 'recovered', kind }, counts.recovered.length);
        this.recoveries.inc({ result: 'failed', kind }, counts.failed.length);
      }
      this.timedOut.inc({ by: 'sweeper' }, r.timedOut.length);
      const duties = { run_timeout: r.timedOut.length, run_timeout_child_cancelled: r.timedOutChildrenCancelled, timeout: r.timeouts, sleep: r.sleeps, parent_woken: r.parentsWoken, child_cancelled: r.childrenCancelled, child_failed: r.childrenFailed, purged: r.purged };
      for (const [duty, n] of Object.entries(duties)) if (n > 0) this.sweeperActions.inc({ duty }, n);
    });
  }

  /** Counts runs by status every `everyMs` (a scrape never waits on the database). */
  watchRunCounts(store: JournalStore, everyMs: number, logger: Logger): void {
    const count = async () => {
      try {
        const counts = await store.runCountByStatus();
        for (const status of RUN_STATUSES) this.runs.set({ status }, counts[status]);
      } catch (err) {
        logger.debug({ err }, 'counting runs for metrics failed; retrying');
      }
    };
    void count();
    const timer = setInterval(() => void count(), everyMs);
    timer.unref();
    this.timers.push(timer);
  }

  stop(): void {
    for (const t of this.timers.splice(0)) clearInterval(t);
  }
}
