import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { chaosEnv, Driver, kill, size, startServer, startSweeper } from './support/cluster.js';

/*
 * Timers fired by the replica that holds them (src/engine/scheduling/due-timers.ts), with real
 * processes. No sweeper runs in the first test, so a run whose sleep, retry backoff or approval
 * deadline ends did so through the replica's in-memory timer alone (before it, such a run waited
 * forever without a sweeper). The second SIGKILLs the replica holding a timer: the sweeper, started
 * only after the kill, fires it, once. No timing is asserted; the bounds are far above any wait.
 */

let db: TestDatabase;
let driver: Driver;
const processes: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_timers');
  driver = await Driver.open(db.url);
});

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await driver?.close();
  await db?.drop();
}, 60_000);

/** The resolutions of each of `runId`'s timers: `resolved` and `noop` entries, with their source. */
async function resolutions(runId: string): Promise<{ refSeq: number; status: string; source: string; at: Date }[]> {
  const { rows } = await driver.pool.query<{ ref_seq: number; status: string; source: string; created_at: Date }>(
    `SELECT ref_seq, status, payload->>'source' AS source, created_at FROM journal WHERE run_id = $1 AND status IN ('resolved', 'noop') ORDER BY seq`, [runId]);
  return rows.map((r) => ({ refSeq: r.ref_seq, status: r.status, source: r.source, at: r.created_at }));
}

describe('timers fire on the replica that holds them', () => {
  it('a sleep, a retry backoff and an approval deadline end with no sweeper at all, each resolved once', async () => {
    // A sweep interval of a day as well, should anything start one in this process.
    const server = await startServer(chaosEnv(db.url, { WAYMARK_SWEEP_INTERVAL_MS: '86400000' }));
    processes.push(server);
    const n = size(5, 50);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await driver.start('timer-sleep', { ms: 1_000 }));
    const retry = await driver.start('timer-retry', { tag: 'r1' });
    const approval = await driver.start('timer-approval', {});
    await driver.waitEnded([...ids, retry, approval], 120_000);
    expect(await driver.statuses([...ids, retry, approval])).toEqual({ SUCCEEDED: n + 2 });
    // The driver pins the digests the server computes, so no run executes under drift.
    expect(await driver.driftCount([...ids, retry, approval])).toBe(0);
    for (const id of [...ids, retry, approval]) {
      const r = await resolutions(id);
      expect(r.map((x) => [x.status, x.source])).toEqual([['resolved', 'timeout']]);
    }
    const out = await driver.pool.query<{ output: unknown }>('SELECT output FROM runs WHERE id = $1', [approval]);
    expect(out.rows[0]!.output).toBe(true); // the pinned default decision (approve)
    await server.stop();
  }, 180_000);

  it('a timer held by a replica that is SIGKILLed fires exactly once, through the sweeper', async () => {
    const a = await startServer(chaosEnv(db.url, { WAYMARK_SWEEP_INTERVAL_MS: '86400000' }));
    processes.push(a);
    // Long enough that A is dead well before its deadline, on a slow machine too.
    const id = await driver.start('timer-sleep', { ms: 8_000 });
    await driver.waitUntil(async () => (await driver.statuses([id])).SUSPENDED === 1, 60_000);
    await kill(a);
    const killedAt = await driver.dbNow();
    expect(await resolutions(id)).toEqual([]); // A died holding it
    const sweeper = await startSweeper(chaosEnv(db.url));
    processes.push(sweeper);
    const b = await startServer(chaosEnv(db.url));
    processes.push(b);
    await driver.waitEnded([id], 60_000);
    expect(await driver.statuses([id])).toEqual({ SUCCEEDED: 1 });
    const r = await resolutions(id);
    expect(r.map((x) => [x.status, x.source])).toEqual([['resolved', 'timeout']]);
    expect(r[0]!.at.getTime()).toBeGreaterThan(killedAt.getTime());
    expect((await driver.journalViolations([id])).gaps).toBe(0);
    // The sweeper is what fired it (B never held it: the run never parked on B): a pass, or its
    // deadline alarm when the deadline fell between passes (src/sweeper/deadline-alarm.ts).
    expect(sweeper.logs.some((l) => (l.msg === 'sweep acted' || l.msg === 'deadline alarm acted') && l.sleeps === 1)).toBe(true);
  }, 180_000);
});
