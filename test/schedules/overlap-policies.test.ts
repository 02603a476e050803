import { describe, expect, it } from 'vitest';
import type { OverlapPolicy } from '../../src/journal/schedule.js';
import { scheduleHarness } from './schedule-harness.js';

/*
 * Each overlap policy (Temporal's ScheduleOverlapPolicy) with a run that outlives its interval: a
 * schedule ticking every second whose first run stays open for 3 ticks, then ends. Also pause on
 * failure, pause and unpause, trigger and backfill.
 */

const T0 = '2030-01-01T00:00:00.000Z';
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();

async function outlived(overlap: OverlapPolicy) {
  const h = await scheduleHarness(T0);
  await h.create({ policies: { overlap, catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null } });
  await h.walk(1, 1_000); // tick 1 starts the long run
  const [long] = await h.runsOf();
  await h.walk(3, 1_000); // ticks 2, 3, 4 while it is open (or not)
  return { h, long: long! };
}

describe('overlap policies, with a run that outlives its interval', () => {
  it('SKIP (the default) drops the ticks while the run is open, then starts the next tick', async () => {
    const { h, long } = await outlived('SKIP');
    expect(await h.scheduledTimes()).toEqual([at(1)]);
    await h.end(long);
    await h.walk(1, 1_000);
    expect(await h.scheduledTimes()).toEqual([at(1), at(5)]);
    expect((await h.get()).state.overlapSkipped).toBe(3);
  });

  it('BUFFER_ONE keeps one tick (the first) to start when the run ends; the others are dropped', async () => {
    const { h, long } = await outlived('BUFFER_ONE');
    expect(await h.scheduledTimes()).toEqual([at(1)]);
    expect((await h.get()).state.buffered.map((b) => b.scheduledAt)).toEqual([at(2)]);
    await h.end(long);
    await h.watch(); // the watch finds the run ended and starts the buffered tick, with its own scheduled time
    expect(await h.scheduledTimes()).toEqual([at(1), at(2)]);
    expect((await h.get()).state.overlapSkipped).toBe(2);
  });

  it('BUFFER_ALL keeps every tick and starts them one after another as each run ends', async () => {
    const { h, long } = await outlived('BUFFER_ALL');
    expect((await h.get()).state.buffered.map((b) => b.scheduledAt)).toEqual([at(2), at(3), at(4)]);
    await h.end(long);
    await h.watch();
    expect(await h.scheduledTimes()).toEqual([at(1), at(2)]);
    const second = (await h.runsOf())[1]!;
    await h.end(second);
    await h.watch();
    expect(await h.scheduledTimes()).toEqual([at(1), at(2), at(3)]);
    expect((await h.get()).state).toMatchObject({ overlapSkipped: 0, buffered: [{ scheduledAt: at(4) }] });
  });

  it('CANCEL_OTHER cancels the open run at each tick and starts the new one', async () => {
    const { h, long } = await outlived('CANCEL_OTHER');
    const runs = await h.runsOf();
    expect(runs.map((r) => r.labels['waymark.scheduled_at'])).toEqual([at(1), at(2), at(3), at(4)]);
    expect(runs.map((r) => r.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'PENDING']);
    expect((await h.store.runGet({ runId: long.id, namespace: 'default' })).error).toMatchObject({ reason: 'cancelled' });
  });

  it('TERMINATE_OTHER terminates the open run (FAILED, reason terminated), and pause on failure does not count it', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'TERMINATE_OTHER', catchupWindowMs: 60_000, pauseOnFailure: true, budgetPause: null } });
    await h.walk(4, 1_000);
    const runs = await h.runsOf();
    expect(runs.map((r) => r.status)).toEqual(['FAILED', 'FAILED', 'FAILED', 'PENDING']);
    expect(runs[0]!.error).toMatchObject({ name: 'RunTerminatedError', reason: 'terminated' });
    expect((await h.get()).paused).toBe(false);
  });

  it('ALLOW_ALL starts every tick while the others are still open', async () => {
    const { h } = await outlived('ALLOW_ALL');
    const runs = await h.runsOf();
    expect(runs.map((r) => r.labels['waymark.scheduled_at'])).toEqual([at(1), at(2), at(3), at(4)]);
    expect(runs.every((r) => r.status === 'PENDING')).toBe(true);
    expect((await h.get()).state.open).toHaveLength(4);
  });
});

describe('pause, trigger and backfill', () => {
  it('pause on failure: a run that fails pauses the schedule at the next look; no tick runs while paused', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'SKIP', catchupWindowMs: 60_000, pauseOnFailure: true, budgetPause: null } });
    await h.walk(1, 1_000);
    const [first] = await h.runsOf();
    await h.end(first!, 'FAILED');
    await h.walk(5, 1_000);
    const s = await h.get();
    expect(s.paused).toBe(true);
    expect(s.note).toContain(first!.id);
    expect(await h.runsOf()).toHaveLength(1);
  });

  it('pause stops the ticks; unpause resumes from now without catching up the paused ones', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null } });
    await h.walk(2, 1_000);
    await h.schedules.pause({ namespace: 'default', id: 's1', note: 'maintenance' });
    expect((await h.get()).note).toBe('maintenance');
    await h.walk(5, 1_000);
    expect(await h.scheduledTimes()).toEqual([at(1), at(2)]);
    await h.schedules.unpause({ namespace: 'default', id: 's1', note: 'back' });
    await h.walk(1, 1_000);
    expect(await h.scheduledTimes()).toEqual([at(1), at(2), at(8)]);
  });

  it('trigger starts a run now, under the schedule policy or the one given', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ spec: { cron: ['0 0 * * *'], intervals: [], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] } });
    h.advance(5_000);
    await h.schedules.trigger({ namespace: 'default', id: 's1', overlap: null });
    await h.look();
    const runs = await h.runsOf();
    expect(runs).toHaveLength(1);
    expect(runs[0]!.labels['waymark.scheduled_at']).toBe(at(5));
    expect((await h.get()).state.recent).toMatchObject([{ cause: 'trigger', runId: runs[0]!.id }]);
    // A second trigger while that run is open: SKIP (the schedule's) drops it, ALLOW_ALL starts it.
    h.advance(1_000);
    await h.schedules.trigger({ namespace: 'default', id: 's1', overlap: null });
    await h.look();
    expect(await h.runsOf()).toHaveLength(1);
    await h.schedules.trigger({ namespace: 'default', id: 's1', overlap: 'ALLOW_ALL' });
    await h.look();
    expect(await h.runsOf()).toHaveLength(2);
  });

  it('backfill starts the ticks of a past range, outside the catch-up window too, and never a time that already ran', async () => {
    const h = await scheduleHarness(T0);
    await h.create({
      spec: { cron: ['* * * * *'], intervals: [], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] },
      policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 10_000, pauseOnFailure: false, budgetPause: null },
    });
    await h.walk(3, 60_000); // 00:01, 00:02, 00:03 ran
    const done = await h.schedules.backfill({
      namespace: 'default', id: 's1', start: new Date('2029-12-31T23:58:00.000Z'), end: new Date('2030-01-01T00:02:00.000Z'), overlap: null,
    });
    expect(done.queued).toBe(5);
    await h.look();
    expect(await h.scheduledTimes()).toEqual([
      '2029-12-31T23:58:00.000Z', '2029-12-31T23:59:00.000Z', '2030-01-01T00:00:00.000Z', '2030-01-01T00:01:00.000Z', '2030-01-01T00:02:00.000Z', '2030-01-01T00:03:00.000Z',
    ]);
    expect((await h.get()).state.actions).toBe(6);
  });
});
