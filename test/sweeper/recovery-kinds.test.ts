import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Metrics } from '../../src/cli/metrics.js';
import { defineWorkflow } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { FakeClock, NS } from '../engine/harness.js';

/*
 * Issue 29 item 14: waymark_recoveries_total and the sweep's report tell an expired lease from a
 * dead session (a killed replica), instead of counting both as expired leases.
 */

const plain = defineWorkflow({ name: 'plain', input: z.object({}) }, async () => 'plain');

describe('recoveries by kind', () => {
  it('an expired lease is counted and reported as expired_lease', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const sweeper = new Sweeper({ store, holder: 's1', intervalMs: 60_000, leaderTtlMs: 5_000, graceMs: 0 });
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.watchSweeper(sweeper);
    const { run } = await store.runCreate({
      namespace: NS, workflowName: 'plain', workflowVersion: '1', workflowDigest: plain.digest, input: {}, leaseFor: { holder: 'dead', ttlMs: 1_000 },
    });
    clock.advance(1_001);
    const report = await sweeper.sweepOnce();
    expect(report.recovered).toEqual([run.id]);
    expect(report.byKind).toEqual({ expired_lease: { recovered: [run.id], failed: [] }, dead_session: { recovered: [], failed: [] } });
    const text = await metrics.registry.metrics();
    expect(text).toContain('waymark_recoveries_total{result="recovered",kind="expired_lease"} 1');
    expect(text).toContain('waymark_recoveries_total{result="recovered",kind="dead_session"} 0');
  });
});
