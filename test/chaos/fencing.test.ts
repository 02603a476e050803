import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, percentile, size, startServer, startSweeper } from './support/cluster.js';

/*
 * Concurrent resumers and the paused stale owner (reliability.md §4.3, Kleppmann's pause). Three
 * replicas race for each run. The owner is frozen with SIGSTOP in the middle of an effect (the
 * sink holds its response), past its lease; the sweeper recovers the run and one of the other two
 * replicas claims it and finishes it. Then the frozen owner is resumed with SIGCONT and tries to
 * carry on: its writes must all be refused (LeaseLostError), so the journal holds one owner's story.
 */

const ITERATIONS = size(2, 10);

let db: TestDatabase;
let driver: Driver;
let sink: EffectSink;
let sweeper: WaymarkProcess;
let servers: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_fencing');
  sink = await EffectSink.start();
  sweeper = await startSweeper(chaosEnv(db.url));
  servers = await Promise.all([1, 2, 3].map(() => startServer(chaosEnv(db.url))));
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

describe('fencing: racing replicas and a stalled owner', () => {
  it(`${ITERATIONS} stalled owners: one owner at a time, every stale write refused`, async () => {
    let staleRejected = 0;
    let staleAccepted = 0;
    let takeovers = 0;
    const fenceMs: number[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      const tag = `f${i}`;
      const slow = `${tag}:slow`;
      let held = false;
      sink.hold((d) => {
        if (d.effect !== slow || held) return false;
        held = true;
        return true;
      });
      const runId = await driver.start('chaos-pair', { sink: sink.url, tag });
      const first = await sink.waitFor((d) => d.effect === slow);
      const owner = servers.find((s) => s.child.pid === first.pid)!;
      process.kill(first.pid, 'SIGSTOP'); // frozen mid-effect, its lease renewals with it

      // Recovered by the sweeper after the lease expires; one of the two live replicas wins the claim.
      const second = await sink.waitFor((d) => d.effect === slow && d !== first);
      expect(second.key).toBe(first.key);
      expect(second.pid).not.toBe(first.pid);
      await driver.waitEnded([runId], 60_000);

      const resumedAt = Date.now();
      process.kill(first.pid, 'SIGCONT');
      sink.releaseHeld(); // the frozen owner now learns its effect "succeeded" and tries to journal it
      await owner.waitForLog((l) => l.msg === 'execution stopped' && l.runId === runId && l.reason === 'lease_lost', 30_000);
      fenceMs.push(Date.now() - resumedAt);
      staleRejected++;

      const run = await driver.store.runGet({ runId, namespace: 'default' });
      expect(run).toMatchObject({ status: 'SUCCEEDED', output: 'pair' });
      // Epochs: claim by the owner (1), recovery (2), one claim by one replica (3): one takeover,
      // two per further (spurious) takeover on a machine too loaded to renew in time.
      expect(run.leaseEpoch).toBeGreaterThanOrEqual(3);
      takeovers += (run.leaseEpoch - 1) / 2;
      // One owner at a time: exactly one execution could write the run's end.
      // The winner logs its end after the commit that waitEnded saw: await the line, then count them all.
      const endedLine = (l: { msg?: unknown; runId?: unknown }) => l.msg === 'execution ended' && l.runId === runId;
      await Promise.any(servers.map((s) => s.waitForLog(endedLine, 30_000)));
      const ended = servers.flatMap((s) => s.logs.filter(endedLine));
      expect(ended).toHaveLength(1);
      expect(ended[0]!.status).toBe('SUCCEEDED');
      const violations = await driver.journalViolations([runId]);
      const entries = await driver.store.journalList({ runId });
      staleAccepted += violations.doubleTerminals + entries.length - 1 - entries.findIndex((e) => e.kind === 'status' && e.name === 'SUCCEEDED');
      expect(violations).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
      // Nothing after the terminal status entry: the stale owner's late writes were all refused.
      expect(entries.at(-1)).toMatchObject({ kind: 'status', name: 'SUCCEEDED' });
      expect(entries.filter((e) => e.kind === 'tool' && e.status === 'ok')).toHaveLength(2);
    }
    sink.hold(null);
    const figures = sink.figures(Array.from({ length: ITERATIONS }, (_, i) => [`f${i}:slow`, `f${i}:after`]).flat(), 'f');
    console.log(`chaos: fencing iterations=${ITERATIONS} takeovers_per_run=${takeovers / ITERATIONS} stale_writes_accepted=${staleAccepted} ` +
      `stale_owners_fenced=${staleRejected} duplicates=${figures.duplicates} lost=${figures.lost} ` +
      `stale_owner_redundant_deliveries=${figures.redundant} time_to_fence_ms p50=${percentile(fenceMs, 50)} p99=${percentile(fenceMs, 99)}`);
    expect(figures).toMatchObject({ duplicates: 0, lost: 0, unkeyed: 0 });
    expect(figures.redundant).toBeGreaterThanOrEqual(ITERATIONS); // each stalled owner's effect was redispatched once
    expect(staleAccepted).toBe(0);
  }, 60_000 + ITERATIONS * 30_000);
});
