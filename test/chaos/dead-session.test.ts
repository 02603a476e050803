import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WaymarkProcess } from '../support/waymark-process.js';
import type { EffectSink } from './support/effect-sink.js';
import { ChaosCluster, chaosEnv, kill, startServer, type Driver } from './support/cluster.js';

/*
 * The dead-session reclaim with real processes (docs/recovery.md "Dead sessions"). Leases here last
 * 10 minutes, so a run can only continue before the test's bounds if its lease is taken as dead
 * before it expires. Replica C is frozen (SIGSTOP) holding runs mid-effect: a stalled holder whose
 * session is alive. Replica A holds other runs mid-effect and is SIGKILLed. A's runs must continue
 * on B at once; C's runs must not be touched (same epoch, no recovery) and C finishes them after
 * SIGCONT, its writes accepted because its lease is still its own.
 */

const LONG_LEASE = { WAYMARK_LEASE_TTL_MS: '600000' };

let cluster: ChaosCluster;
let driver: Driver;
let sink: EffectSink;
const servers: WaymarkProcess[] = [];

beforeAll(async () => {
  cluster = await ChaosCluster.open('waymark_chaos_dead_session', LONG_LEASE);
  ({ driver, sink } = cluster);
});

afterAll(async () => {
  for (const s of servers) if (s.child.pid && s.child.exitCode === null && s.child.signalCode === null) process.kill(s.child.pid, 'SIGCONT');
  cluster?.servers.push(...servers);
  await cluster?.close();
});

async function holdAll(tags: string[], pid: number): Promise<string[]> {
  const ids = [];
  for (const tag of tags) ids.push(await driver.start('chaos-pair', { sink: sink.url, tag }));
  for (const tag of tags) expect((await sink.waitFor((d) => d.effect === `${tag}:slow`, 60_000)).pid).toBe(pid);
  return ids;
}

describe('dead sessions: a killed replica\'s runs continue at once, a stalled one keeps its runs', () => {
  it('SIGKILL: reclaimed long before the lease expires; SIGSTOP: never reclaimed, and its writes still land', async () => {
    const frozen = new Set<number>();
    sink.hold((d) => frozen.has(d.pid)); // every effect of C and A waits mid-flight

    const c = await startServer(chaosEnv(cluster.db.url, LONG_LEASE));
    servers.push(c);
    frozen.add(c.child.pid!);
    const stalledIds = await holdAll(['c0', 'c1'], c.child.pid!);
    process.kill(c.child.pid!, 'SIGSTOP');

    const a = await startServer(chaosEnv(cluster.db.url, LONG_LEASE));
    servers.push(a);
    frozen.add(a.child.pid!);
    const killedIds = await holdAll(['a0', 'a1', 'a2'], a.child.pid!);
    const b = await startServer(chaosEnv(cluster.db.url, LONG_LEASE));
    servers.push(b);

    await kill(a);
    await driver.waitEnded(killedIds, 60_000);
    for (const runId of killedIds) {
      // Claimed by A (1), reclaimed as dead (2), claimed by B (3).
      expect(await driver.store.runGet({ runId, namespace: 'default' }))
        .toMatchObject({ status: 'SUCCEEDED', output: 'pair', leaseEpoch: 3, recoveryCount: 0 });
    }
    const reclaimed = cluster.sweeper.logs.filter((l) => l.msg === 'sweep acted').flatMap((l) => l.recovered as string[]);
    expect(reclaimed.sort()).toEqual([...killedIds].sort());

    // The stalled holder's runs: the statements that took A's runs passed over them (C's session is
    // alive), and so did every check since.
    for (const runId of stalledIds) {
      expect(await driver.store.runGet({ runId, namespace: 'default' }))
        .toMatchObject({ status: 'RUNNING', leaseEpoch: 1, leaseHolder: expect.stringContaining(`:${c.child.pid}`) });
    }

    frozen.clear();
    process.kill(c.child.pid!, 'SIGCONT');
    sink.releaseHeld();
    await driver.waitEnded(stalledIds, 60_000);
    for (const runId of stalledIds) {
      expect(await driver.store.runGet({ runId, namespace: 'default' }))
        .toMatchObject({ status: 'SUCCEEDED', output: 'pair', leaseEpoch: 1, recoveryCount: 0 });
    }
    const tags = ['a0', 'a1', 'a2', 'c0', 'c1'];
    const figures = sink.figures(tags.flatMap((t) => [`${t}:slow`, `${t}:after`]));
    expect({ duplicates: figures.duplicates, lost: figures.lost, unkeyed: figures.unkeyed }).toEqual({ duplicates: 0, lost: 0, unkeyed: 0 });
    expect(await driver.journalViolations([...killedIds, ...stalledIds])).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
  }, 240_000);
});
