import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, kill, LEASE_TTL_MS, percentile, size, startServer, startSweeper } from './support/cluster.js';

/*
 * Soak with random faults (reliability.md §4.9): runs over three server processes while a seeded
 * chaos loop SIGKILLs a random server (restarting a replacement) or freezes one with SIGSTOP past
 * its lease. Faults are paced by progress (every so many effects at the sink), so the test does not
 * depend on machine speed. Afterwards: nothing stuck, nothing doubled, nothing lost, and the time
 * from each kill to the recovery of every run the dead process held (its next journal entry; a run
 * whose end the process had already sent before it died is counted apart).
 * SEED=<n> (WAYMARK_CHAOS_SEED) replays a sequence of faults.
 */

const RUNS = size(100, 1_000);
const FAULTS = size(4, 16);
const SEED = Number(process.env.WAYMARK_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator, so a failing sequence can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

let db: TestDatabase;
let driver: Driver;
let sink: EffectSink;
let sweeper: WaymarkProcess;
let servers: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_soak');
  sink = await EffectSink.start();
  sweeper = await startSweeper(chaosEnv(db.url));
  driver = await Driver.open(db.url);
});

afterAll(async () => {
  for (const s of servers) if (s.child.pid) process.kill(s.child.pid, 'SIGCONT');
  await Promise.all(servers.map((s) => s.stop()));
  await sweeper?.stop();
  await driver?.close();
  await sink?.close();
  await db?.drop();
});

describe('soak with random kills', () => {
  it(`${RUNS} runs over 3 servers with ${FAULTS} random faults: stuck 0, duplicated 0, lost 0`, async () => {
    const random = rng(SEED);
    const env = chaosEnv(db.url);
    servers = await Promise.all([1, 2, 3].map(() => startServer(env)));
    const everyServer = [...servers];
    const expected: string[] = [];
    const ids: string[] = [];
    const kills: { at: Date; held: string[] }[] = [];
    let pauses = 0;
    sink.delayMs = 20; // tools take a little time, as real ones do: more runs are mid-effect at a fault
    const started = Date.now();
    // Runs arrive in batches; a fault strikes when half of each batch's effects are in, so there is
    // always work in flight when it does.
    const batches = FAULTS + 1;
    for (let b = 0; b < batches; b++) {
      const from = Math.floor((RUNS * b) / batches);
      const to = Math.floor((RUNS * (b + 1)) / batches);
      const before = expected.length;
      for (let i = from; i < to; i++) {
        const tag = `s${i}`;
        const approval = random() < 0.2;
        const child = random() < 0.1;
        ids.push(await driver.start('chaos-soak', { sink: sink.url, tag, approval, child }));
        expected.push(`${tag}:a`, `${tag}:b`, `${tag}:c`, ...(child ? [`${tag}:kid`] : []));
      }
      if (b === FAULTS) break;
      const half = before + Math.floor((expected.length - before) / 2);
      await sink.waitFor(() => new Set(sink.deliveries.map((d) => d.key)).size >= half, 180_000);
      const victim = Math.floor(random() * servers.length);
      const target = servers[victim]!;
      if (random() < 0.7) {
        // Frozen first, so the runs it holds are read before the sweeper can hand any of them on
        // (a recovery faster than that read would otherwise be missing from the figures).
        process.kill(target.child.pid!, 'SIGSTOP');
        const held = await driver.heldBy(target.child.pid!);
        await kill(target);
        kills.push({ at: await driver.dbNow(), held });
        servers[victim] = await startServer(env);
        everyServer.push(servers[victim]!);
      } else {
        // Frozen past its lease: its runs are taken over, and its late writes must be refused.
        process.kill(target.child.pid!, 'SIGSTOP');
        await new Promise((resolve) => setTimeout(resolve, LEASE_TTL_MS * 1.5)); // the fault's length
        process.kill(target.child.pid!, 'SIGCONT');
        pauses++;
      }
    }
    let stuck = 0;
    await driver.waitEnded(ids, 300_000).catch(async () => {
      stuck = await driver.openCount(ids);
    });
    const elapsedS = (Date.now() - started) / 1000;

    const statuses = await driver.statuses(ids);
    const figures = sink.figures(expected, 's');
    const journal = await driver.journalViolations(ids);
    const recovery: number[] = [];
    let endedInFlight = 0;
    for (const k of kills) {
      const first = await driver.firstAppendAfter(k.held, k.at);
      // A run whose end the killed process had already sent (PostgreSQL commits it after the kill).
      const ended = new Set(await driver.endedWithoutEntryAfter(k.held, k.at));
      endedInFlight += ended.size;
      for (const id of k.held) if (!ended.has(id)) recovery.push(first.get(id) ?? Number.POSITIVE_INFINITY);
    }
    const finite = recovery.filter(Number.isFinite);
    const fenced = everyServer.flatMap((s) => s.logs.filter((l) => l.msg === 'execution stopped' && l.reason === 'lease_lost')).length;
    console.log(`chaos: soak SEED=${SEED} runs=${RUNS} completed=${statuses.SUCCEEDED ?? 0} failed=${statuses.FAILED ?? 0} stuck=${stuck} ` +
      `kills=${kills.length} pauses=${pauses} effects=${expected.length} duplicates=${figures.duplicates} lost=${figures.lost} ` +
      `redundant_deliveries=${figures.redundant} stale_writes_accepted=${journal.doubleTerminals + journal.orphanTerminals} stale_owners_fenced=${fenced} ` +
      `journal_gaps=${journal.gaps} recovery_ms p50=${percentile(finite, 50).toFixed(0)} p99=${percentile(finite, 99).toFixed(0)} ` +
      `(${finite.length} runs held by killed servers, ${endedInFlight} more ended by their last statement) throughput=${(RUNS / elapsedS).toFixed(1)} runs/s`);
    expect(stuck).toBe(0);
    expect(statuses).toEqual({ SUCCEEDED: RUNS });
    expect(figures).toMatchObject({ duplicates: 0, lost: 0, unkeyed: 0 });
    expect(journal).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
    expect(finite.length).toBe(recovery.length); // every run a killed server held was recovered
  }, 600_000);
});
