import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WaymarkProcess } from '../support/waymark-process.js';
import type { EffectSink } from './support/effect-sink.js';
import { ChaosCluster, chaosEnv, kill, NS, startServer, type Driver } from './support/cluster.js';

/*
 * A fork on real processes (docs/forks.md): the replica executing a fork is SIGKILLed while the
 * fork's own effect is in flight at the sink; another replica recovers the fork, which finishes
 * with every effect once: the source's effect before the fork point is never delivered again, the
 * fork's effect after it is applied once under the fork's own key (redispatches with that key in
 * the documented window are allowed, a second application is not).
 */

let cluster: ChaosCluster;
let driver: Driver;
let sink: EffectSink;
let servers: WaymarkProcess[];

beforeAll(async () => {
  cluster = await ChaosCluster.open('waymark_chaos_fork');
  ({ driver, sink, servers } = cluster);
  servers.push(await startServer(chaosEnv(cluster.db.url)), await startServer(chaosEnv(cluster.db.url)));
}, 180_000);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

describe('a fork whose replica dies mid-way', () => {
  it('finishes with every effect once', async () => {
    const source = await driver.start('chaos-pair', { sink: sink.url, tag: 'f1' });
    await driver.waitEnded([source], 60_000);
    expect((await driver.store.runGet({ runId: source, namespace: NS })).status).toBe('SUCCEEDED');
    const sourceEntries = await driver.store.journalList({ runId: source });
    const after = sourceEntries.find((e) => e.kind === 'tool' && e.status === 'running' && e.payload !== null && JSON.stringify(e.payload).includes('f1:after'))
      ?? sourceEntries.filter((e) => e.kind === 'tool' && e.status === 'running')[1]!;
    const sourceKey = after.idempotencyKey;

    // The fork's own delivery of f1:after is held at the sink: its replica is then mid-effect.
    sink.hold((d) => d.effect === 'f1:after' && d.key !== sourceKey);
    const { run: fork } = await driver.engine.runFork({ namespace: NS, sourceRunId: source, at: after.seq, execute: false });
    const held = await sink.waitFor((d) => d.effect === 'f1:after' && d.key !== sourceKey, 60_000);
    const victim = servers.find((s) => s.child.pid === held.pid);
    expect(victim, 'the delivery came from one of the servers').toBeDefined();
    await kill(victim!);
    sink.hold(null);
    sink.releaseHeld();
    await driver.waitEnded([fork.id], 120_000);

    const ended = await driver.store.runGet({ runId: fork.id, namespace: NS });
    expect(ended.status).toBe('SUCCEEDED');
    expect(ended.labels['waymark.fork_of']).toBe(source);
    // The source's effect before the fork point: delivered once, by the source, never by the fork.
    expect(sink.deliveries.filter((d) => d.effect === 'f1:slow')).toHaveLength(1);
    // f1:after: the source's key once, and the fork's own key (applied once, whatever its redispatches).
    const afterKeys = new Set(sink.deliveries.filter((d) => d.effect === 'f1:after').map((d) => d.key));
    expect(afterKeys.size).toBe(2);
    expect(sink.figures(['f1:slow', 'f1:after'], 'f1:')).toMatchObject({ applied: 3, lost: 0, unkeyed: 0 });
    expect(await driver.journalViolations([source, fork.id])).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
  }, 240_000);
});
