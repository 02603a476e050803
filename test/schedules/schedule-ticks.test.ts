import { describe, expect, it } from 'vitest';
import { scheduleRunKey } from '../../src/journal/schedule.js';
import { InvalidDeclarationError, InvalidInputError } from '../../src/engine/index.js';
import { ScheduleExistsError, WorkflowNotFoundError } from '../../src/journal/errors.js';
import { scheduleHarness } from './schedule-harness.js';

/*
 * The ticker on an injected clock (memory store): one run per tick whatever looks again, the
 * catch-up window, remaining actions, jitter, start/end/exclusions, and what each run records.
 */

const T0 = '2030-01-01T00:00:00.000Z';

describe('schedule ticks', () => {
  it('starts one run per tick with the schedule id and scheduled time, however often it looks', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null } });
    for (let i = 0; i < 3; i++) {
      h.advance(1_000);
      await h.look();
      await h.look(); // a second look at the same instant starts nothing
    }
    const runs = await h.runsOf();
    expect(runs.map((r) => r.labels['waymark.scheduled_at'])).toEqual(['2030-01-01T00:00:01.000Z', '2030-01-01T00:00:02.000Z', '2030-01-01T00:00:03.000Z']);
    expect(runs[0]).toMatchObject({
      workflowName: 'job', workflowDigest: 'sha256:job', input: { n: 1 }, status: 'PENDING',
      labels: { team: 'a', 'waymark.schedule_id': 's1' }, idempotencyKey: scheduleRunKey('s1', '2030-01-01T00:00:01.000Z'),
    });
    const s = await h.get();
    expect(s.state).toMatchObject({ actions: 3, cursor: '2030-01-01T00:00:03.000Z', overlapSkipped: 0, missedCatchup: 0 });
    expect(s.state.recent.map((a) => a.runId)).toEqual(runs.map((r) => r.id));
  });

  it('a tick missed while nothing ran is started within the catch-up window and counted missed outside it', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 3_000, pauseOnFailure: false, budgetPause: null } });
    h.advance(10_000); // the ticker was down for 10 ticks
    await h.look();
    expect(await h.scheduledTimes()).toEqual(['2030-01-01T00:00:07.000Z', '2030-01-01T00:00:08.000Z', '2030-01-01T00:00:09.000Z', '2030-01-01T00:00:10.000Z']);
    expect((await h.get()).state).toMatchObject({ missedCatchup: 6, actions: 4 });
  });

  it('stops after its remaining actions; GetSchedule shows no next time then', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ remainingActions: 2, policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 60_000, pauseOnFailure: false, budgetPause: null } });
    expect((await h.schedules.get({ namespace: 'default', id: 's1' })).nextTimes).toHaveLength(2);
    await h.walk(5, 1_000);
    expect(await h.runsOf()).toHaveLength(2);
    const view = await h.schedules.get({ namespace: 'default', id: 's1' });
    expect(view.schedule.state.remainingActions).toBe(0);
    expect(view.schedule.dueAt).toBeNull();
    expect(view.nextTimes).toEqual([]);
  });

  it('jitter delays each start by a fixed amount within it; the scheduled time stays nominal', async () => {
    const h = await scheduleHarness(T0);
    await h.create({ spec: { cron: ['* * * * *'], intervals: [], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 30_000, exclude: [] } });
    const due = (await h.get()).dueAt!;
    const offset = due.getTime() - Date.parse('2030-01-01T00:01:00.000Z');
    expect(offset).toBeGreaterThanOrEqual(0);
    expect(offset).toBeLessThan(30_000);
    h.set(new Date(due.getTime() - 1).toISOString());
    await h.look();
    expect(await h.runsOf()).toHaveLength(0);
    h.set(due.toISOString());
    await h.look();
    expect(await h.scheduledTimes()).toEqual(['2030-01-01T00:01:00.000Z']);
  });

  it('ticks only between start and end, never on an excluded time', async () => {
    const h = await scheduleHarness(T0);
    await h.create({
      spec: {
        cron: ['* * * * *'], intervals: [], timeZone: 'UTC', startAt: '2030-01-01T00:02:00.000Z', endAt: '2030-01-01T00:06:00.000Z', jitterMs: 0,
        exclude: ['4 * * * *'],
      },
      policies: { overlap: 'ALLOW_ALL', catchupWindowMs: 3_600_000, pauseOnFailure: false, budgetPause: null },
    });
    await h.walk(10, 60_000);
    expect(await h.scheduledTimes()).toEqual(['2030-01-01T00:02:00.000Z', '2030-01-01T00:03:00.000Z', '2030-01-01T00:05:00.000Z', '2030-01-01T00:06:00.000Z']);
    expect((await h.get()).dueAt).toBeNull();
  });

  it('refuses a bad spec, an unknown workflow, an input its schema refuses and a taken id, storing nothing', async () => {
    const h = await scheduleHarness(T0);
    await expect(h.create({ spec: { cron: ['61 * * * *'], intervals: [], timeZone: 'Mars/Olympus', startAt: null, endAt: null, jitterMs: 0, exclude: [] } }))
      .rejects.toBeInstanceOf(InvalidDeclarationError);
    await expect(h.create({ spec: { cron: ['not cron'], intervals: [{ everyMs: 10, offsetMs: 0 }], timeZone: 'UTC', startAt: null, endAt: null, jitterMs: 0, exclude: [] } }))
      .rejects.toMatchObject({ violations: [{ field: 'spec.cron[0]' }, { field: 'spec.intervals[0].every' }] });
    await expect(h.create({ action: { workflowName: 'nope', input: {}, labels: {}, budgetUsd: null, timeoutMs: null } })).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await expect(h.create({ action: { workflowName: 'job', input: {}, labels: {}, budgetUsd: null, timeoutMs: null } })).rejects.toBeInstanceOf(InvalidInputError);
    expect(await h.store.scheduleList({ namespace: 'default', pageSize: 10 })).toEqual([]);
    await h.create();
    await expect(h.create()).rejects.toBeInstanceOf(ScheduleExistsError);
  });

  it('a sweeper that does not lead starts nothing', async () => {
    const h = await scheduleHarness(T0);
    await h.create();
    await h.sweeper.leader.stop();
    h.advance(5_000);
    await h.look();
    expect(await h.runsOf()).toHaveLength(0);
  });
});
