import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { RunEngine } from '../../../src/engine/run-engine.js';
import { Registry } from '../../../src/engine/registry.js';
import { loadUserModule } from '../../../src/engine/user-module.js';
import { PostgresStore } from '../../../src/store/postgres/postgres-store.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { WaymarkProcess } from '../../support/waymark-process.js';
import { EffectSink } from './effect-sink.js';

/*
 * Real `waymark` processes for the chaos tests, and a driver in the test process that creates runs
 * and waits for them to end on database wake-ups (never on time). Timing knobs are the short CI
 * ones of reliability.md §4.0: lease 1.5 s, sweep every 250 ms.
 */

export const FULL = process.env.WAYMARK_CHAOS === 'full';
/** The short size in `npm test`, the full one in `npm run test:chaos`. */
export const size = (short: number, full: number): number => (FULL ? full : short);

export const FIXTURES = path.resolve('test/chaos/fixtures/workflows.ts');
export const LEASE_TTL_MS = 1_500;
export const SWEEP_INTERVAL_MS = 250;
export const NS = 'default';
const TERMINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

export function chaosEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    WAYMARK_ADDR: '127.0.0.1:0',
    WAYMARK_METRICS_ADDR: '127.0.0.1:0',
    WAYMARK_WORKFLOWS: FIXTURES,
    WAYMARK_LEASE_TTL_MS: String(LEASE_TTL_MS),
    WAYMARK_SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS),
    WAYMARK_SHUTDOWN_GRACE_MS: '2000',
    ...extra,
  };
}

export async function startServer(env: Record<string, string>): Promise<WaymarkProcess> {
  const p = WaymarkProcess.start(['server'], { env });
  await p.listening();
  return p;
}

export async function startSweeper(env: Record<string, string>): Promise<WaymarkProcess> {
  const p = WaymarkProcess.start(['sweeper'], { env });
  await p.waitForLog((l) => l.msg === 'waymark sweeper started');
  return p;
}

/** SIGKILL (what a crash is) and wait for the exit. */
export async function kill(p: WaymarkProcess): Promise<void> {
  await p.stop('SIGKILL');
}

/** Nearest-rank percentile of `values` (ms), or NaN when empty. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The digest of each workflow of `modulePath` as `waymark server` computes it (the built loader in a plain node process). */
function serverDigests(modulePath: string): Map<string, string> {
  const loader = pathToFileURL(path.resolve('dist/src/engine/user-module.js')).href;
  const script = `const { loadUserModule } = await import(${JSON.stringify(loader)});
    const { registry } = await loadUserModule(${JSON.stringify(modulePath)});
    process.stdout.write(JSON.stringify(registry.workflows().map((w) => [w.name, w.digest])));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return new Map(JSON.parse(out) as [string, string][]);
}

/** Creates runs and watches them end, from the test process, on the same database. */
export class Driver {
  private constructor(readonly store: PostgresStore, readonly engine: RunEngine, readonly pool: pg.Pool) {}

  static async open(databaseUrl: string, modulePath = FIXTURES): Promise<Driver> {
    const store = await PostgresStore.connect({ url: databaseUrl, applicationName: 'chaos-driver', poolSize: 4 });
    // vitest transforms the module itself, so the bodies' source text (part of the digest) differs
    // from what `waymark server` loads: the driver pins the servers' digests, or every run would
    // start under drift (a `drift` entry and a re-pin on its first execution).
    const { registry: loaded } = await loadUserModule(modulePath, new Registry());
    const digests = serverDigests(modulePath);
    const registry = new Registry();
    for (const wf of loaded.workflows()) registry.register(Object.freeze({ ...wf, digest: digests.get(wf.name) ?? wf.digest }));
    for (const tool of loaded.tools()) if (!registry.hasTool(tool.name)) registry.register(tool); // a flow registered here names them
    const engine = new RunEngine({ store, registry, holder: 'chaos-driver', leaseTtlMs: LEASE_TTL_MS });
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    pool.on('error', () => undefined); // an idle connection killed by a PG restart or DROP DATABASE; the pool replaces it
    return new Driver(store, engine, pool);
  }

  /** A PENDING run for the executors to claim. */
  async start(workflowName: string, input: Record<string, unknown>): Promise<string> {
    const { run } = await this.engine.runStart({ namespace: NS, workflowName, input });
    return run.id;
  }

  /** Resolves once every run in `ids` is terminal. */
  async waitEnded(ids: string[], timeoutMs: number): Promise<void> {
    let open = -1;
    await this.waitUntil(async () => (open = await this.openCount(ids)) === 0, timeoutMs)
      .catch((err: Error) => { throw new Error(`${open} of ${ids.length} runs still open: ${err.message}`); });
  }

  /**
   * Resolves once `check` holds. Re-checked on the store's NOTIFY wake-ups (every journal write
   * and every run becoming PENDING), and every second too, because notifications are lost while a
   * connection is down (the PG restart test). A check that throws (database restarting) is retried.
   */
  async waitUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    let done!: () => void;
    let fail!: (e: Error) => void;
    const finished = new Promise<void>((resolve, reject) => {
      done = resolve;
      fail = reject;
    });
    let checking = false;
    let again = false;
    const recheck = async (): Promise<void> => {
      if (checking) {
        again = true;
        return;
      }
      checking = true;
      try {
        if (await check()) done();
      } catch {
        // The database is restarting: the next wake-up or re-check tries again.
      } finally {
        checking = false;
        if (again) {
          again = false;
          void recheck();
        }
      }
    };
    const wake = () => void recheck();
    const unsubscribe = await this.store.wakeupSubscribe({ onRun: wake, onPending: wake, onResync: wake });
    const interval = setInterval(wake, 1_000);
    const timer = setTimeout(() => fail(new Error(`condition not met within ${timeoutMs} ms`)), timeoutMs);
    wake();
    try {
      await finished;
    } finally {
      clearInterval(interval);
      clearTimeout(timer);
      await unsubscribe().catch(() => undefined);
    }
  }

  async openCount(ids: string[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND status <> ALL($2::text[])`, [ids, TERMINAL]);
    return rows[0]!.n;
  }

  async statuses(ids: string[]): Promise<Record<string, number>> {
    const { rows } = await this.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) GROUP BY status`, [ids]);
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  /** How many of `ids` executed against a definition other than the one they pinned (`drift` entries). */
  async driftCount(ids: string[]): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM journal WHERE run_id = ANY($1::uuid[]) AND kind = 'status' AND name = 'drift'`, [ids]);
    return rows[0]!.n;
  }

  /**
   * Journal invariants checked in SQL over the given runs and their children: seqs dense from 0,
   * at most one terminal per intent, every terminal pointing at an intent of the same effect.
   * Returns the number of violations of each.
   */
  async journalViolations(ids: string[]): Promise<{ gaps: number; doubleTerminals: number; orphanTerminals: number }> {
    const scope = `WITH scope AS (SELECT id FROM runs WHERE id = ANY($1::uuid[]) OR parent_run_id = ANY($1::uuid[]))`;
    const gaps = await this.pool.query<{ n: number }>(`${scope}
      SELECT count(*)::int AS n FROM (SELECT run_id, count(*) AS c, max(seq) AS m FROM journal WHERE run_id IN (SELECT id FROM scope)
        GROUP BY run_id) j JOIN runs r ON r.id = j.run_id WHERE j.c <> j.m + 1 OR r.next_seq <> j.c`, [ids]);
    const doubles = await this.pool.query<{ n: number }>(`${scope}
      SELECT count(*)::int AS n FROM (SELECT run_id, ref_seq FROM journal WHERE run_id IN (SELECT id FROM scope)
        AND status IN ('ok', 'error') AND ref_seq IS NOT NULL GROUP BY run_id, ref_seq HAVING count(*) > 1) d`, [ids]);
    const orphans = await this.pool.query<{ n: number }>(`${scope}
      SELECT count(*)::int AS n FROM journal t LEFT JOIN journal i ON i.run_id = t.run_id AND i.seq = t.ref_seq
      WHERE t.run_id IN (SELECT id FROM scope) AND t.status IN ('ok', 'error') AND t.ref_seq IS NOT NULL
        AND (i.status IS DISTINCT FROM 'running' OR i.content_key <> t.content_key)`, [ids]);
    return { gaps: gaps.rows[0]!.n, doubleTerminals: doubles.rows[0]!.n, orphanTerminals: orphans.rows[0]!.n };
  }

  /** The database clock, for recovery times measured against journal timestamps. */
  async dbNow(): Promise<Date> {
    return this.store.clockNow();
  }

  /**
   * Of `ids`, the runs that ended with no journal entry after `since`: a process SIGKILLed at
   * `since` can still end a run it held, because PostgreSQL finishes a statement it had already
   * received (a commit waiting on its WAL flush) after the client is gone. Such a run needed no
   * recovery; only its holder could have written its end.
   */
  async endedWithoutEntryAfter(ids: string[], since: Date): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT r.id FROM runs r WHERE r.id = ANY($1::uuid[]) AND r.status = ANY($3::text[])
       AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.run_id = r.id AND j.created_at > $2)`, [ids, since, TERMINAL]);
    return rows.map((r) => r.id);
  }

  /** Runs whose lease `holder` held when it died (still RUNNING under it). */
  async heldBy(holderPid: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ id: string }>(
      `SELECT id FROM runs WHERE status = 'RUNNING' AND lease_holder LIKE '%:' || $1::text`, [String(holderPid)]);
    return rows.map((r) => r.id);
  }

  /** ms from `since` to each run's first journal entry written after it (its recovery), or null. */
  async firstAppendAfter(ids: string[], since: Date): Promise<Map<string, number>> {
    const { rows } = await this.pool.query<{ run_id: string; ms: number }>(
      `SELECT run_id, extract(epoch FROM min(created_at) - $2::timestamptz) * 1000 AS ms FROM journal
       WHERE run_id = ANY($1::uuid[]) AND created_at > $2 GROUP BY run_id`, [ids, since]);
    return new Map(rows.map((r) => [r.run_id, Number(r.ms)]));
  }

  async close(): Promise<void> {
    await this.store.close();
    await this.pool.end();
  }
}

/**
 * What most chaos tests stand on: a database of their own, the effect sink, one sweeper process
 * and the driver; `servers` collects the replicas a test starts, stopped (with the rest) by close().
 */
export class ChaosCluster {
  readonly servers: WaymarkProcess[] = [];

  private constructor(readonly db: TestDatabase, readonly sink: EffectSink, readonly sweeper: WaymarkProcess, readonly driver: Driver) {}

  static async open(database: string, env: Record<string, string> = {}): Promise<ChaosCluster> {
    const db = await createTestDatabase(database);
    const sink = await EffectSink.start();
    const sweeper = await startSweeper(chaosEnv(db.url, env));
    return new ChaosCluster(db, sink, sweeper, await Driver.open(db.url));
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.stop()));
    await this.sweeper.stop();
    await this.driver.close();
    await this.sink.close();
    await this.db.drop();
  }
}

