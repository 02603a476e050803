// Schedules (issue 36): what the store sustains with 10,000 schedules, through the sweeper's ticker
// as `waymark sweeper` runs it (src/sweeper/schedule-ticker.ts: one fenced fire per tick, a run
// created with its schedule-and-time key). Two figures, each on a fresh database:
//  - burst: every schedule's tick at the same instant; ticks/s is how fast the ticker clears them
//    (10,000 over the time from the tick, or the sweeper's start when creating them took longer, to
//    the last run's commit), lateness each run's commit less that same instant;
//  - steady: the schedules spread evenly over a period (half the burst rate or slower), run for two
//    periods; lateness of the second period's ticks.
// Runs are created PENDING for a replica's heartbeat (none executes them): the figure is the
// ticker and the store, not the workflows. Alone: `node --import tsx bench/schedules.ts [schedules]`.
import { pino } from 'pino';
import { emptyScheduleState, type ScheduleRecord } from '../src/journal/schedule.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { Sweeper } from '../src/sweeper/sweeper.js';
import { runAlone, type BenchDatabase } from './postgres.js';
import { percentile, pool } from './stats.js';

const WORKFLOW = 'bench-scheduled';
const NS = 'bench-schedules';

export interface ScheduleFigure {
  schedules: number;
  burstTicksPerSec: number; burstP50Ms: number; burstP99Ms: number;
  steadyPeriodS: number; steadyTicksPerSec: number; steadyP50Ms: number; steadyP99Ms: number; steadyTicks: number;
}

async function openStore(url: string): Promise<PostgresStore> {
  const store = await PostgresStore.connect({ url, poolSize: 12, applicationName: 'waymark-bench-schedules' });
  await migrate({ pool: store.pool });
  await store.replicaHeartbeat({
    replicaId: 'bench-replica', ttlMs: 3_600_000,
    workflows: [{ name: WORKFLOW, version: '1', digest: 'sha256:bench', drift: 'warn', description: '', inputSchema: { type: 'object' } }],
  });
  return store;
}

/** `count` schedules ticking every `everyMs`, the i-th at offset `offsetOf(i)`, created with the store's own call. */
async function createSchedules(store: PostgresStore, count: number, everyMs: number, offsetOf: (i: number) => number, now: Date): Promise<void> {
  await pool(count, 16, async (i) => {
    const offsetMs = offsetOf(i);
    const next = Math.floor((now.getTime() - offsetMs) / everyMs) * everyMs + offsetMs + everyMs;
    await store.scheduleCreate({
      namespace: NS, id: `s${String(i).padStart(5, '0')}`, paused: false, note: '',
      spec: { cron: [], intervals: [{ everyMs, offsetMs }], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] },
      action: { workflowName: WORKFLOW, input: { i }, labels: {}, budgetUsd: null, timeoutMs: null },
      policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 3_600_000, pauseOnFailure: false, budgetPause: null },
      state: { ...emptyScheduleState(null), cursor: now.toISOString() }, dueAt: new Date(next),
    } satisfies Omit<ScheduleRecord, 'revision' | 'createdAt' | 'updatedAt'>);
  });
}

/** Each scheduled run's commit time less its scheduled time (database clock), for runs scheduled in [from, to). */
async function lateness(store: PostgresStore, from: number, to: number): Promise<{ late: number[]; firstMs: number; lastMs: number }> {
  const { rows } = await store.pool.query<{ scheduled: string; created: Date }>(
    `SELECT labels->>'waymark.scheduled_at' AS scheduled, created_at AS created FROM runs
     WHERE namespace = $1 AND (labels->>'waymark.scheduled_at')::timestamptz >= $2 AND (labels->>'waymark.scheduled_at')::timestamptz < $3`,
    [NS, new Date(from), new Date(to)]);
  const late = rows.map((r) => r.created.getTime() - Date.parse(r.scheduled));
  const created = rows.map((r) => r.created.getTime());
  return { late, firstMs: Math.min(...created), lastMs: Math.max(...created) };
}

async function runCount(store: PostgresStore): Promise<number> {
  return (await store.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE namespace = $1', [NS])).rows[0]!.n;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`bench schedules: ${what} did not happen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function startSweeper(store: PostgresStore): Sweeper {
  // As `waymark sweeper` builds it (sweeper-command.ts), with its default ticker settings.
  const sweeper = new Sweeper({ store, holder: `bench-schedules:${process.pid}`, leaderTtlMs: 30_000, logger: pino({ level: 'warn' }) });
  sweeper.start();
  return sweeper;
}

export async function measureSchedules(burstUrl: string, steadyUrl: string, count: number, progress: (m: string) => void = () => {}): Promise<ScheduleFigure> {
  // Burst: one tick for every schedule at `at`, a few seconds after they are all created.
  let burst: { late: number[]; firstMs: number; lastMs: number };
  {
    const store = await openStore(burstUrl);
    try {
      const now = await store.clockNow();
      const hour = 3_600_000;
      const at = now.getTime() + 5_000 + count; // past the creation below, usually (about 1 ms a schedule)
      progress(`schedules: creating ${count} schedules, all due at one instant`);
      await createSchedules(store, count, hour, () => at % hour, now);
      const burstStart = Math.max(at, (await store.clockNow()).getTime());
      const sweeper = startSweeper(store);
      try {
        await until(async () => (await runCount(store)) >= count, `${count} burst ticks`, 600_000);
      } finally {
        await sweeper.stop();
      }
      const ticked = await lateness(store, at, at + 1);
      if (ticked.late.length !== count) throw new Error(`bench schedules: ${ticked.late.length} runs for ${count} ticks`);
      // Late from the instant the ticker could first take them.
      burst = { late: ticked.late.map((l) => l + at - burstStart), firstMs: burstStart, lastMs: ticked.lastMs };
    } finally {
      await store.close();
    }
  }
  const burstRate = count / ((burst.lastMs - burst.firstMs) / 1000);

  // Steady: spread over a period at most half the burst rate (and at least 10 s).
  const periodS = Math.max(10, Math.ceil((2 * count) / burstRate));
  const periodMs = periodS * 1000;
  let steady: { late: number[] };
  {
    const store = await openStore(steadyUrl);
    try {
      const now = await store.clockNow();
      progress(`schedules: ${count} schedules spread over ${periodS} s (${(count / periodS).toFixed(0)} ticks/s), two periods`);
      await createSchedules(store, count, periodMs, (i) => Math.floor((i * periodMs) / count), now);
      const start = (await store.clockNow()).getTime();
      const sweeper = startSweeper(store);
      try {
        const from = start + periodMs;
        const to = from + periodMs;
        await until(async () => (await store.clockNow()).getTime() > to + 2_000, 'two periods', 3 * periodMs + 60_000);
        await until(async () => (await lateness(store, from, to)).late.length >= count, 'the second period\'s ticks', 600_000);
        steady = await lateness(store, from, to);
      } finally {
        await sweeper.stop();
      }
    } finally {
      await store.close();
    }
  }
  return {
    schedules: count,
    burstTicksPerSec: burstRate, burstP50Ms: percentile(burst.late, 50), burstP99Ms: percentile(burst.late, 99),
    steadyPeriodS: periodS, steadyTicksPerSec: count / periodS, steadyP50Ms: percentile(steady.late, 50), steadyP99Ms: percentile(steady.late, 99), steadyTicks: steady.late.length,
  };
}

await runAlone(import.meta.url, async (db: BenchDatabase) => {
  const count = Number(process.argv[2] ?? 10_000);
  const f = await measureSchedules(await db.create('bench_schedules_burst'), await db.create('bench_schedules_steady'), count, (m) => process.stderr.write(`bench: ${m}\n`));
  console.log(JSON.stringify(f, null, 2));
});
