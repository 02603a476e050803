import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/cli/config.js';
import type { JournalStore } from '../../src/store/store.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { RETENTION_DEFAULTS } from '../../src/sweeper/retention-duty.js';
import { FakeClock } from '../engine/harness.js';

/*
 * The sweeper's retention duty (6) over the memory store with a clock the test moves: each
 * namespace's horizon (WAYMARK_RETENTION_NAMESPACES) or the default (WAYMARK_RETENTION_DAYS), 0
 * keeping runs forever, and the settings that configure it. The store side is
 * test/conformance/retention.conformance.ts; test/store/retention-load.test.ts runs it on PostgreSQL at load.
 */

const DAY = 86_400_000;

async function finished(store: JournalStore, namespace: string): Promise<string> {
  const { lease } = await store.runCreate({ namespace, workflowName: 'w', workflowVersion: '1', workflowDigest: 'd', input: null, leaseFor: { holder: 'x', ttlMs: 1_000 } });
  await store.runStatusSet({ lease: lease!, status: 'SUCCEEDED', output: null });
  return lease!.runId;
}

describe('Sweeper duty 6: retention', () => {
  it('purges each namespace at its own horizon, the rest at the default, and never a namespace kept forever', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const ids = { default: await finished(store, 'default'), scratch: await finished(store, 'scratch'), audit: await finished(store, 'audit') };
    const sweeper = new Sweeper({
      store, holder: 's', intervalMs: 60_000, retention: { defaultMs: 30 * DAY, namespaces: { scratch: DAY, audit: 0 }, batchSize: 1 },
    });
    clock.advance(DAY + 1);
    expect(await sweeper.sweepOnce()).toMatchObject({ leader: true, purged: 1, purgedEntries: 1 });
    await expect(store.runGet({ runId: ids.scratch, namespace: 'scratch' })).rejects.toThrow();
    clock.advance(30 * DAY);
    expect((await sweeper.sweepOnce()).purged).toBe(1);
    await expect(store.runGet({ runId: ids.default, namespace: 'default' })).rejects.toThrow();
    clock.advance(3_650 * DAY);
    expect((await sweeper.sweepOnce()).purged).toBe(0);
    expect((await store.runGet({ runId: ids.audit, namespace: 'audit' })).status).toBe('SUCCEEDED');
  });

  it('repeats full batches up to maxBatches per sweep', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    for (let i = 0; i < 7; i++) await finished(store, 'default');
    const sweeper = new Sweeper({ store, holder: 's', maxBatches: 2, retention: { ...RETENTION_DEFAULTS, batchSize: 3 } });
    clock.advance(31 * DAY);
    expect((await sweeper.sweepOnce()).purged).toBe(6);
    expect((await sweeper.sweepOnce()).purged).toBe(1);
  });

  it('is set by WAYMARK_RETENTION_DAYS, WAYMARK_RETENTION_NAMESPACES and WAYMARK_RETENTION_BATCH, 30 days by default', () => {
    expect(loadConfig({}).retention).toEqual({ defaultMs: 30 * DAY, namespaces: {}, batchSize: 50 });
    expect(loadConfig({ WAYMARK_RETENTION_DAYS: '0', WAYMARK_RETENTION_NAMESPACES: 'scratch=0.5, audit=365', WAYMARK_RETENTION_BATCH: '10' }).retention)
      .toEqual({ defaultMs: 0, namespaces: { scratch: DAY / 2, audit: 365 * DAY }, batchSize: 10 });
    expect(() => loadConfig({ WAYMARK_RETENTION_NAMESPACES: 'scratch' })).toThrow(/WAYMARK_RETENTION_NAMESPACES.*namespace=days/);
    expect(() => loadConfig({ WAYMARK_RETENTION_DAYS: '-1' })).toThrow(/WAYMARK_RETENTION_DAYS/);
  });
});
