import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import { defineWorkflow } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { Sweeper, type SweepReport } from '../../src/sweeper/sweeper.js';
import { NS } from '../engine/harness.js';

/*
 * The sweeper's deadline alarm (src/sweeper/deadline-alarm.ts), on the real clock: runs park before
 * the sweeper starts (what a replica restart leaves behind: nothing holds their timers in memory),
 * and the sweeper's interval is an hour, so only the alarm can resolve their deadlines in this test.
 */

const dozer = defineWorkflow({ name: 'dozer', input: z.object({}) }, async (ctx) => {
  await ctx.sleep('300ms');
  return 'rested';
});
const waiter = defineWorkflow({ name: 'waiter', input: z.object({}), timeout: '400ms' }, async (ctx) => (await ctx.approve({ title: 'ok?' })).approved);

function world() {
  const store = new MemoryStore();
  const engine = new RunEngine({ store, registry: new Registry().register(dozer, waiter), holder: 'worker', leaseTtlMs: 5_000 });
  const sweeper = new Sweeper({ store, holder: 'sweeper', intervalMs: 3_600_000, graceMs: 0 });
  return { store, engine, sweeper };
}

/** The first `deadlines` report (an alarm's pass) for which `acted` holds. */
function alarmPass(sweeper: Sweeper, acted: (r: SweepReport) => boolean): Promise<SweepReport> {
  return new Promise((resolve) => {
    const on = (r: SweepReport): void => {
      if (!acted(r)) return;
      sweeper.events.off('deadlines', on);
      resolve(r);
    };
    sweeper.events.on('deadlines', on);
  });
}

describe('the sweeper deadline alarm', () => {
  it('resolves a sleep that parked before the sweeper started at its deadline, once, between sweeps', async () => {
    const { store, engine, sweeper } = world();
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'dozer', input: {} });
    await engine.runExecutePending();
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUSPENDED');
    const sweeps: SweepReport[] = [];
    sweeper.events.on('sweep', (r) => sweeps.push(r));
    const woke = alarmPass(sweeper, (r) => r.sleeps > 0);
    sweeper.start();
    try {
      expect(await woke).toMatchObject({ leader: true, sleeps: 1, timeouts: 0 });
      expect(sweeps.map((r) => r.sleeps)).toEqual([0]); // the first sweep found it not yet due; no second sweep ran
      await engine.runExecutePending();
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'SUCCEEDED', output: 'rested' });
      const resolutions = (await store.journalList({ runId: run.id })).filter((e) => e.status === 'resolved' || e.status === 'noop');
      expect(resolutions.map((e) => [e.status, (e.payload as { source?: string }).source])).toEqual([['resolved', 'timeout']]);
    } finally {
      await sweeper.stop();
    }
  });

  it('fails a parked run at its run timeout, between sweeps', async () => {
    const { store, engine, sweeper } = world();
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'waiter', input: {} });
    await engine.runExecutePending();
    expect((await store.runGet({ runId: run.id, namespace: NS })).status).toBe('SUSPENDED');
    const timedOut = alarmPass(sweeper, (r) => r.timedOut.length > 0);
    sweeper.start();
    try {
      expect((await timedOut).timedOut).toEqual([run.id]);
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'FAILED', error: { reason: 'run_timed_out' } });
    } finally {
      await sweeper.stop();
    }
  });

  it('does nothing while another sweeper leads', async () => {
    const { store, engine } = world();
    const leader = new Sweeper({ store, holder: 'leader', intervalMs: 3_600_000, graceMs: 0 });
    await leader.sweepOnce(); // takes the leader lease, then is never started
    const follower = new Sweeper({ store, holder: 'follower', intervalMs: 3_600_000, graceMs: 0 });
    await engine.runStart({ namespace: NS, workflowName: 'dozer', input: {} });
    await engine.runExecutePending();
    expect(await follower.deadlinesOnce()).toMatchObject({ leader: false, sleeps: 0 });
  });
});
