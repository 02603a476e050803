// Timer lateness (issue 31): N runs sleeping 1 s at once, how late after its deadline each sleep was
// resolved, with the replica's in-memory timers (DueTimers) and with the sweeper alone (before them).
import { pino } from 'pino';
import { z } from 'zod';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import { Registry } from '../src/engine/registry.js';
import { RunEngine } from '../src/engine/run-engine.js';
import { DueTimers } from '../src/engine/scheduling/due-timers.js';
import { Executor } from '../src/engine/scheduling/executor.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { Sweeper } from '../src/sweeper/sweeper.js';
import { percentile } from './stats.js';

const sleepOneSecond = defineWorkflow({ name: 'bench-sleep-1s', input: z.object({ n: z.number() }) }, async (ctx) => {
  await ctx.sleep(1_000);
  return 'woke';
});

/**
 * Starts `runs` runs that each sleep 1 s, all parked at once, on one replica (executor, sweeper at
 * its default 5 s interval, and DueTimers when `timers`), waits until all ended, and reads each
 * sleep's lateness from the journal: its resolution's commit time less its deadline, both on the
 * database clock.
 */
export async function measureTimers(url: string, runs: number, timers: boolean): Promise<{ p50Ms: number; p99Ms: number; maxMs: number }> {
  const store = await PostgresStore.connect({ url, poolSize: 20, applicationName: 'waymark-bench-timers' });
  await migrate({ pool: store.pool });
  const logger = pino({ level: 'warn' });
  const engine = new RunEngine({ store, registry: new Registry().register(sleepOneSecond), holder: `bench-timers:${process.pid}:${timers}`, leaseTtlMs: 30_000, logger });
  const executor = new Executor({ driver: engine.driver, store, concurrency: 32, logger });
  const due = timers ? new DueTimers({ driver: engine.driver, logger }) : null;
  due?.events.on('fired', ({ applied }) => applied && executor.wake());
  const sweeper = new Sweeper({ store, holder: `bench-sweeper:${process.pid}:${timers}`, logger });
  await store.leaseSessionOpen({ holder: engine.driver.holder });
  await executor.start();
  due?.start();
  sweeper.start();
  try {
    const ids: string[] = [];
    for (let i = 0; i < runs; i++) ids.push((await engine.runStart({ namespace: 'bench-timers', workflowName: sleepOneSecond.name, input: { n: i } })).run.id);
    for (;;) {
      const { rows } = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND status <> 'SUCCEEDED'`, [ids]);
      if (rows[0]!.n === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { rows } = await store.pool.query<{ ms: number }>(
      `SELECT extract(epoch FROM r.created_at - (s.payload->>'deadlineAt')::timestamptz) * 1000 AS ms
       FROM journal s JOIN journal r ON r.run_id = s.run_id AND r.ref_seq = s.seq AND r.status = 'resolved'
       WHERE s.run_id = ANY($1::uuid[]) AND s.status = 'suspended' AND s.kind = 'sleep'`, [ids]);
    const late = rows.map((r) => Number(r.ms));
    return { p50Ms: percentile(late, 50), p99Ms: percentile(late, 99), maxMs: Math.max(...late) };
  } finally {
    await sweeper.stop();
    await due?.stop();
    await executor.stop({ graceMs: 1_000 });
    await store.close();
  }
}
