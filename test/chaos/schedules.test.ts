import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient } from '../../clients/ts/src/index.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { chaosEnv, Driver, kill, size, startServer, startSweeper } from './support/cluster.js';

/*
 * A schedule ticking every second (docs/schedules.md "Exactly one run per tick") while real
 * processes die: two sweepers (one leads the ticker, one stands by) and two replicas, SIGKILLed
 * and restarted one of each per cycle, then every sweeper killed for longer than the catch-up
 * window. Afterwards, from the database: each scheduled time has exactly one run; every tick from
 * the schedule's creation to its cursor is either a run or counted missed; no tick is missed
 * outside the all-sweepers outage, and there only ticks the first look after it found later than
 * the window; no run exists for a tick the outage put past the window. Every run ends SUCCEEDED.
 * Nothing is timed: the test waits on the database, and the bounds hold whatever the machine's speed.
 */

const WINDOW_MS = 15_000;
const ID = 'every-second';
const CYCLES = size(4, 20);

let db: TestDatabase;
let driver: Driver;
const sweepers: WaymarkProcess[] = [];
const replicas: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_schedules');
  driver = await Driver.open(db.url);
});

afterAll(async () => {
  await Promise.all([...sweepers, ...replicas].map((p) => p.stop()));
  await driver?.close();
  await db?.drop();
}, 60_000);

/** The schedule's runs: id, scheduled time, creation time (database clock). */
async function scheduleRuns(): Promise<{ id: string; scheduledAt: number; createdAt: number }[]> {
  const { rows } = await driver.pool.query<{ id: string; scheduled: string; created_at: Date }>(
    `SELECT id, labels->>'waymark.scheduled_at' AS scheduled, created_at FROM runs WHERE labels->>'waymark.schedule_id' = $1`, [ID]);
  return rows.map((r) => ({ id: r.id, scheduledAt: Date.parse(r.scheduled), createdAt: r.created_at.getTime() }));
}

async function runCount(): Promise<number> {
  const { rows } = await driver.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE labels->>'waymark.schedule_id' = $1`, [ID]);
  return rows[0]!.n;
}

/** Waits until the schedule has `n` more runs than now (the ticker is taking ticks). */
async function ticksTaken(n: number): Promise<void> {
  const target = (await runCount()) + n;
  await driver.waitUntil(async () => (await runCount()) >= target, 120_000);
}

/** Waits until a run exists for a tick at or after `at` (ms): the ticker has caught up to it. */
async function caughtUpTo(at: number): Promise<void> {
  await driver.waitUntil(async () => (await scheduleRuns()).some((r) => r.scheduledAt >= at), 120_000);
}

describe('a schedule ticking every second while sweepers and replicas are SIGKILLed', () => {
  it('starts exactly one run per tick, loses none inside the catch-up window and starts none outside it', async () => {
    const env = chaosEnv(db.url);
    replicas.push(await startServer(env), await startServer(env));
    sweepers.push(await startSweeper(env), await startSweeper(env));
    const client = createWaymarkClient({ address: await replicas[0]!.listening() });
    const created = await client.createSchedule(ID, {
      workflow: 'timer-sleep', input: { ms: 50 }, intervals: [{ everyMs: 1_000 }], overlap: 'ALLOW_ALL', catchupWindowMs: WINDOW_MS,
    });
    client.close();
    const createdAt = Number(created.info!.createTime!.seconds) * 1000 + Math.floor(created.info!.createTime!.nanos / 1e6);
    await ticksTaken(2);

    // Rolling chaos: each cycle one sweeper (the leader half the time) and one replica die and come back.
    for (let i = 0; i < CYCLES; i++) {
      const s = i % 2;
      const r = (i + 1) % 2;
      await Promise.all([kill(sweepers[s]!), kill(replicas[r]!)]);
      [sweepers[s], replicas[r]] = await Promise.all([startSweeper(env), startServer(env)]);
      await ticksTaken(2);
    }

    // Every sweeper down for longer than the window: the ticks it spans are missed, not caught up.
    const killStartAt = (await driver.dbNow()).getTime();
    await caughtUpTo(killStartAt);
    const lastBefore = Math.max(...(await scheduleRuns()).map((r) => r.scheduledAt));
    await Promise.all(sweepers.map((p) => kill(p)));
    const killedAt = (await driver.dbNow()).getTime();
    await driver.waitUntil(async () => (await driver.dbNow()).getTime() >= killedAt + WINDOW_MS + 8_000, 120_000);
    const restartAt = (await driver.dbNow()).getTime();
    sweepers[0] = await startSweeper(env);
    sweepers.length = 1;
    await caughtUpTo(restartAt + 2_000);

    // Stop ticking (a pass in flight loses its compare-and-set), then read what happened.
    const pauser = createWaymarkClient({ address: await replicas[0]!.listening() });
    await pauser.pauseSchedule(ID, { note: 'chaos test done' });
    pauser.close();
    const schedule = await driver.store.scheduleGet({ namespace: 'default', id: ID });
    const state = schedule!.state;
    const runs = await scheduleRuns();

    // Exactly one run per scheduled time, each on a tick of the interval.
    const perTime = new Map<number, number>();
    for (const r of runs) perTime.set(r.scheduledAt, (perTime.get(r.scheduledAt) ?? 0) + 1);
    expect([...perTime.values()].filter((n) => n > 1)).toEqual([]);
    expect(runs.filter((r) => r.scheduledAt % 1_000 !== 0)).toEqual([]);
    expect(state.actions).toBe(runs.length);
    expect(state.overlapSkipped).toBe(0);

    // Every tick from creation to the cursor is a run or counted missed.
    // (The schedule's first tick is the first after the clock read just before its row was written:
    // the second boundary next to create_time is a tick only when it has a run.)
    const cursor = Date.parse(state.cursor!);
    const boundary = Math.floor(createdAt / 1_000) * 1_000;
    const first = perTime.has(boundary) ? boundary : boundary + 1_000;
    const ticks: number[] = [];
    for (let t = first; t <= cursor; t += 1_000) ticks.push(t);
    const missed = ticks.filter((t) => !perTime.has(t));
    expect(runs.filter((r) => r.scheduledAt > cursor || r.scheduledAt < first)).toEqual([]);
    expect(missed.length).toBe(state.missedCatchup);

    // Missed ticks only in the outage, and only those the first look after it found past the window:
    // that look came no later than the first run it created.
    const firstLookAfter = Math.min(...runs.filter((r) => r.createdAt >= restartAt).map((r) => r.createdAt));
    expect(missed.filter((t) => t <= lastBefore || t >= firstLookAfter - WINDOW_MS)).toEqual([]);
    // No run for a tick the outage put past the window (every look after it came after restartAt).
    const outside = ticks.filter((t) => t > killedAt + 1_000 && t < restartAt - WINDOW_MS);
    expect(outside.length).toBeGreaterThan(0);
    expect(outside.filter((t) => perTime.has(t))).toEqual([]);

    // The runs themselves: each ends once, through the kills of the replicas executing them.
    const ids = runs.map((r) => r.id);
    await driver.waitEnded(ids, 180_000);
    expect(await driver.statuses(ids)).toEqual({ SUCCEEDED: ids.length });
    expect(await driver.journalViolations(ids)).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
  }, 600_000);
});
