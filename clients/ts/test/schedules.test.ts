import { timestampDate } from '@bufbuild/protobuf/wkt';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sweeper } from '../../../src/sweeper/sweeper.js';
import { startApiServer, type ApiServer } from '../../../test/support/api-server.js';
import {
  createWaymarkClient, InvalidArgument, overlapPolicyName, ScheduleActionCause, ScheduleExists, ScheduleNotFound, ScheduleOverlapPolicy,
  scheduleDefinition, type WaymarkClient,
} from '../src/index.js';

// The client's schedule methods (docs/clients.md "Schedules") against the API on a real HTTP/2
// port and PostgreSQL; a sweeper in this process takes the ticks (one look when the test says).

let s: ApiServer;
let client: WaymarkClient;
let sweeper: Sweeper;

beforeAll(async () => {
  s = await startApiServer({ prefix: 'waymark_ts_schedules' });
  client = createWaymarkClient({ address: s.address, namespace: 'team-a' });
  await s.store.replicaHeartbeat({ replicaId: 'replica-a', workflows: s.engine.serves(), ttlMs: 3_600_000 });
  sweeper = new Sweeper({ store: s.store, holder: 'sweeper-ts', leaderTtlMs: 3_600_000, logger: pino({ level: 'silent' }) });
  await sweeper.sweepOnce();
}, 120_000);

afterAll(async () => {
  client?.close();
  await s?.close();
}, 120_000);

const all = async <T>(it: AsyncIterable<T>): Promise<T[]> => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('schedules', () => {
  it('create, get, list, update one field keeping the rest, pause, unpause, trigger, backfill, delete', { timeout: 120_000 }, async () => {
    const created = await client.createSchedule('reports', {
      workflow: 'echo-flow', input: { value: 'weekly' }, cron: ['0 9 * * 1'], timeZone: 'America/New_York', labels: { team: 'a' },
      overlap: 'BUFFER_ALL', catchupWindowMs: 120_000, runTimeoutMs: 60_000, remainingActions: 3,
    });
    expect(created).toMatchObject({ namespace: 'team-a', id: 'reports', remainingActions: 3n });
    expect(overlapPolicyName(created.policies!.overlap)).toBe('BUFFER_ALL');
    expect(created.info!.futureActionTimes).toHaveLength(3);
    expect(scheduleDefinition(created)).toMatchObject({
      workflow: 'echo-flow', input: { value: 'weekly' }, cron: ['0 9 * * 1'], timeZone: 'America/New_York', catchupWindowMs: 120_000, runTimeoutMs: 60_000,
    });
    await expect(client.createSchedule('reports', { workflow: 'echo-flow', input: {}, cron: ['* * * * *'] })).rejects.toBeInstanceOf(ScheduleExists);
    const bad = await client.createSchedule('bad', { workflow: 'echo-flow', cron: ['not cron'] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidArgument);
    expect((bad as InvalidArgument).fieldViolations.map((v) => v.field)).toEqual(['schedule.spec.cron[0]']);

    // One field of the spec changes; the rest of it, the action and the policies stay.
    const moved = await client.updateSchedule('reports', { timeZone: 'Asia/Tokyo' });
    expect(moved.spec).toMatchObject({ cron: ['0 9 * * 1'], timeZone: 'Asia/Tokyo' });
    expect(moved.action).toEqual(created.action);
    expect(moved.policies).toEqual(created.policies);
    expect(moved.remainingActions).toBe(3n);
    // A key given as undefined clears it: unlimited.
    expect((await client.updateSchedule('reports', { remainingActions: undefined })).remainingActions).toBeUndefined();
    expect((await client.updateSchedule('reports', { remainingActions: 0 })).info!.futureActionTimes).toEqual([]);

    await client.createSchedule('archive', { workflow: 'echo-flow', input: {}, intervals: [{ everyMs: 3_600_000 }], paused: true });
    expect((await all(client.listSchedules({ pageSize: 1 }))).map((x) => x.id)).toEqual(['archive', 'reports']);

    expect((await client.pauseSchedule('reports', { note: 'holiday' })).paused).toBe(true);
    expect((await client.unpauseSchedule('reports', { note: 'back' })).note).toBe('back');

    expect((await client.triggerSchedule('reports', { overlap: 'ALLOW_ALL' })).info!.bufferedActions).toBe(1);
    const backfill = await client.backfillSchedule('reports', new Date('2026-03-02T00:00:00Z'), new Date('2026-03-16T23:59:59Z'), { overlap: ScheduleOverlapPolicy.ALLOW_ALL });
    expect(backfill.queued).toBe(3); // Mondays 09:00 Tokyo: 2 Mar, 9 Mar, 16 Mar
    await sweeper.schedules!.lookOnce();
    const after = await client.getSchedule('reports');
    expect(after.info!.recentActions.map((a) => a.cause).sort()).toEqual(
      [ScheduleActionCause.TRIGGER, ScheduleActionCause.BACKFILL, ScheduleActionCause.BACKFILL, ScheduleActionCause.BACKFILL].sort(),
    );
    const runs = await all(client.listRuns({ labels: { 'waymark.schedule_id': 'reports' } }));
    expect(runs).toHaveLength(4);
    const backfilled = after.info!.recentActions.filter((a) => a.cause === ScheduleActionCause.BACKFILL).map((a) => timestampDate(a.scheduleTime!).toISOString()).sort();
    expect(backfilled).toEqual(['2026-03-02T00:00:00.000Z', '2026-03-09T00:00:00.000Z', '2026-03-16T00:00:00.000Z']);

    await client.deleteSchedule('reports');
    await expect(client.getSchedule('reports')).rejects.toBeInstanceOf(ScheduleNotFound);
    const missing = await client.deleteSchedule('reports').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ScheduleNotFound);
    expect((missing as ScheduleNotFound).scheduleId).toBe('reports');
  });
});
