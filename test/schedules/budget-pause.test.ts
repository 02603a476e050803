import { describe, expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import type { Run } from '../../src/journal/run.js';
import { scheduleHarness } from './schedule-harness.js';

/*
 * The budget-aware pause (docs/schedules.md "Budget pause"): a schedule pauses itself once the runs
 * it started within the trailing window have spent more than its limit, folded from the journal's
 * priced entries; spend of runs created before the window does not count.
 */

const T0 = '2030-01-01T00:00:00.000Z';
type Harness = Awaited<ReturnType<typeof scheduleHarness>>;

/** A priced model call journaled on `run` (what an agent's call records), `usd` its cost. */
async function spend(h: Harness, run: Run, usd: number): Promise<void> {
  const lease = await h.store.runLeaseAcquire({ runId: run.id, namespace: 'default', holder: 'spender', ttlMs: 60_000 });
  await h.store.journalAppend({ lease: lease!, entries: [newEntry({ kind: 'model', name: 'llm', status: 'ok', costUsd: usd })] });
  await h.store.runLeaseRelease({ lease: lease! });
}

describe('budget pause', () => {
  it('pauses once its runs spend more than the limit within the window, naming the spend; no tick starts after', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: { limitUsd: 1, windowMs: 10_000 } } });
    await h.walk(2, 1_000);
    const [a, b] = await h.runsOf();
    await spend(h, a!, 0.6);
    await h.walk(1, 1_000); // $0.60 of $1: it goes on
    expect((await h.get()).paused).toBe(false);
    expect(await h.runsOf()).toHaveLength(3);
    await spend(h, b!, 0.6);
    await h.walk(1, 1_000);
    const paused = await h.get();
    expect(paused.paused).toBe(true);
    expect(paused.note).toBe('paused: its runs spent $1.2000 in the last 10000 ms, over the limit of $1');
    expect(await h.runsOf()).toHaveLength(3);
    await h.walk(5, 1_000);
    expect(await h.runsOf()).toHaveLength(3);
  });

  it('does not count the spend of runs created before the window', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: { limitUsd: 1, windowMs: 3_000 } } });
    await h.walk(1, 1_000);
    const [first] = await h.runsOf();
    await h.walk(4, 1_000); // the first run is now older than the window
    await spend(h, first!, 5);
    await h.walk(2, 1_000);
    expect((await h.get()).paused).toBe(false);
    expect(await h.runsOf()).toHaveLength(7);
    const [, , , , , , last] = await h.runsOf();
    await spend(h, last!, 1.5); // inside the window: over the limit
    await h.walk(1, 1_000);
    expect((await h.get()).paused).toBe(true);
  });
});
