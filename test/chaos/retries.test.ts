import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WaymarkProcess } from '../support/waymark-process.js';
import type { EffectSink } from './support/effect-sink.js';
import { ChaosCluster, chaosEnv, kill, NS, startServer, type Driver } from './support/cluster.js';

/*
 * Retries and run timeouts across real crashes (docs/recovery.md "Retries across crashes"). Real
 * `waymark server` and `waymark sweeper` processes on PostgreSQL; the sink in this process answers
 * the tool's first deliveries with 503 and counts every delivery with its idempotency key: it, not
 * the journal, says how many attempts reached the world.
 */

let cluster: ChaosCluster;
let driver: Driver;
let sink: EffectSink;
let servers: WaymarkProcess[];

beforeAll(async () => {
  cluster = await ChaosCluster.open('waymark_chaos_retries');
  ({ driver, sink, servers } = cluster);
  servers.push(await startServer(chaosEnv(cluster.db.url)));
}, 180_000);

afterAll(async () => {
  await cluster?.close();
}, 120_000);

async function toolAttempts(runId: string): Promise<{ status: string; attempt: number | null }[]> {
  const entries = await driver.store.journalList({ runId });
  return entries.filter((e) => e.kind === 'tool' && e.status !== 'resolved').map((e) => ({ status: e.status, attempt: e.attempt }));
}

describe('retries and run timeouts across crashes', () => {
  it('a tool failing twice then succeeding: three deliveries with one key, three attempts journaled, SUCCEEDED', async () => {
    const effect = 'r1:flaky';
    sink.failFirst(effect, 2, 503);
    const runId = await driver.start('chaos-retry', { sink: sink.url, tag: 'r1' });
    await driver.waitEnded([runId], 60_000);
    const run = await driver.store.runGet({ runId, namespace: NS });
    expect(run.status).toBe('SUCCEEDED');
    const deliveries = sink.deliveries.filter((d) => d.effect === effect);
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((d) => d.key)).size).toBe(1);
    expect(deliveries[0]!.key).toMatch(new RegExp(`^${runId}:`));
    expect(await toolAttempts(runId)).toEqual([
      { status: 'running', attempt: 1 }, { status: 'error', attempt: 1 }, { status: 'suspended', attempt: 2 },
      { status: 'running', attempt: 2 }, { status: 'error', attempt: 2 }, { status: 'suspended', attempt: 3 },
      { status: 'running', attempt: 3 }, { status: 'ok', attempt: 3 },
    ]);
  }, 120_000);

  it('SIGKILL of the server during each backoff wait: after recovery exactly the policy\'s attempts, none lost, none repeated', async () => {
    const effect = 'r2:flaky';
    sink.failFirst(effect, 10, 503); // fails every attempt: the policy (3) decides how many there are
    const runId = await driver.start('chaos-retry', { sink: sink.url, tag: 'r2', slow: true });
    for (let n = 1; n <= 2; n++) {
      // The failure and its timer are one append: once the timer is journaled, the server dies
      // inside the wait (4 s, then 8 s: long enough for the kill to land before the next attempt).
      await driver.waitUntil(async () => (await toolAttempts(runId)).filter((e) => e.status === 'suspended').length >= n, 30_000);
      await kill(servers.pop()!);
      servers.push(await startServer(chaosEnv(cluster.db.url)));
    }
    await driver.waitEnded([runId], 60_000);
    const run = await driver.store.runGet({ runId, namespace: NS });
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({ name: 'RetriesExhaustedError', reason: 'retries_exhausted', details: { attempts: 3 } });
    const deliveries = sink.deliveries.filter((d) => d.effect === effect);
    expect(deliveries).toHaveLength(3);
    expect(new Set(deliveries.map((d) => d.key)).size).toBe(1);
    const journaled = await toolAttempts(runId);
    expect(journaled.filter((e) => e.status === 'running').map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(journaled.filter((e) => e.status === 'error').map((e) => e.attempt)).toEqual([1, 2, 3]);
    const violations = await driver.journalViolations([runId]);
    expect(violations).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
    console.log(`chaos: retries under SIGKILL: ${deliveries.length} deliveries, 1 key, attempts ${journaled.filter((e) => e.status === 'running').length}, 2 servers killed mid-backoff`);
  }, 240_000);
});
