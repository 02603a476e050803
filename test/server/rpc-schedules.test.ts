import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { SCOPES } from '../../src/engine/access/api-keys.js';
import { BadRequestSchema, ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { ScheduleActionCause, ScheduleOverlapPolicy, ScheduleService, type CreateScheduleRequestSchema } from '../../src/gen/waymark/v1/schedule_service_pb.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';

/*
 * ScheduleService on a real server (HTTP/2, PostgreSQL, API keys; docs/schedules.md): create, get,
 * list (paged), update, pause, unpause, trigger, backfill, delete; the runs a sweeper's ticker starts
 * for them carry the schedule's labels and are found by ListRuns' label filter. Invalid requests are
 * INVALID_ARGUMENT naming the field and write nothing; a key of one namespace can neither see nor
 * touch another namespace's schedule; calls without valid credentials, or without the scope, are refused.
 */

const TIMEOUT = 120_000;
let s: ApiServer;
let sweeper: Sweeper;
const keys = { a: '', aRead: '', b: '' };
const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
let schedules: Client<typeof ScheduleService>;
let runs: Client<typeof RunService>;

type CreateInit = MessageInitShape<typeof CreateScheduleRequestSchema>;
type ScheduleInit = NonNullable<CreateInit['schedule']>;
const everyMinute = (id: string, extra: { [K in keyof ScheduleInit]?: ScheduleInit[K] } = {}): CreateInit => ({
  schedule: {
    id,
    spec: { cron: ['*/1 * * * *'], timeZone: 'Europe/Berlin' },
    action: { workflow: 'echo-flow', input: json({ value: id }), labels: { team: 'a' } },
    ...extra,
  } as ScheduleInit,
});

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('the call succeeded; a failure was expected');
}
const reason = (err: ConnectError) => err.findDetails(ErrorInfoSchema)[0]?.reason;
const fields = (err: ConnectError) => err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field) ?? [];

beforeAll(async () => {
  s = await startApiServer({ prefix: 'waymark_schedules', auth: {} });
  const k = s.deps.api.keys;
  keys.a = (await k.create({ name: 'a', namespace: 'team-a', scopes: ['runs:read', 'runs:write'], createdByKeyId: null })).secret;
  keys.aRead = (await k.create({ name: 'a read', namespace: 'team-a', scopes: ['runs:read'], createdByKeyId: null })).secret;
  keys.b = (await k.create({ name: 'b', namespace: 'team-b', scopes: [...SCOPES.filter((x) => x !== 'admin')], createdByKeyId: null })).secret;
  const transport = createGrpcTransport({ baseUrl: s.server.url });
  schedules = createClient(ScheduleService, transport);
  runs = createClient(RunService, transport);
  // The ticker creates runs for the replicas that serve the workflow: this server's replica says it serves them.
  await s.store.replicaHeartbeat({ replicaId: 'replica-a', workflows: s.engine.serves(), ttlMs: 3_600_000 });
  sweeper = new Sweeper({ store: s.store, holder: 'sweeper-test', leaderTtlMs: 3_600_000, logger: pino({ level: 'silent' }) });
  await sweeper.sweepOnce();
}, TIMEOUT);

afterAll(async () => {
  await s?.close();
}, TIMEOUT);

describe('ScheduleService', () => {
  it('creates, gets, lists by page, updates, pauses, unpauses, triggers, backfills and deletes a schedule', { timeout: TIMEOUT }, async () => {
    const asA = bearer(keys.a);
    const created = (await schedules.createSchedule(everyMinute('nightly', {
      spec: { cron: ['0 3 * * *'], timeZone: 'Europe/Berlin', exclude: ['0 3 * * 0'] },
      policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE, catchupWindow: { seconds: 300n, nanos: 0 }, pauseOnFailure: true },
      remainingActions: 5n,
    }), asA)).schedule!;
    expect(created).toMatchObject({
      namespace: 'team-a', id: 'nightly', paused: false, remainingActions: 5n,
      spec: { cron: ['0 3 * * *'], timeZone: 'Europe/Berlin', exclude: ['0 3 * * 0'] },
      action: { workflow: 'echo-flow', labels: { team: 'a' } },
      policies: { overlap: ScheduleOverlapPolicy.BUFFER_ONE, catchupWindow: { seconds: 300n }, pauseOnFailure: true },
      info: { actionCount: 0n, missedCatchupWindow: 0n, overlapSkipped: 0n, runningRunIds: [], recentActions: [] },
    });
    // Next times: five (the remaining actions), each 03:00 in Berlin, none on a Sunday.
    const next = created.info!.futureActionTimes.map((t) => timestampDate(t));
    expect(next).toHaveLength(5);
    for (const t of next) {
      expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit', weekday: 'short' }).format(t)).toMatch(/^(Mon|Tue|Wed|Thu|Fri|Sat) 03:00$/);
    }
    const got = (await schedules.getSchedule({ scheduleId: 'nightly' }, asA)).schedule!;
    expect(got).toEqual(created);

    // Paging: three schedules, two a page, in id order.
    await schedules.createSchedule(everyMinute('alpha', { paused: true }), asA);
    await schedules.createSchedule(everyMinute('zulu', { paused: true }), asA);
    const first = await schedules.listSchedules({ pageSize: 2 }, asA);
    expect(first.schedules.map((x) => x.id)).toEqual(['alpha', 'nightly']);
    expect(first.schedules[0]!.info!.futureActionTimes).toHaveLength(1);
    const second = await schedules.listSchedules({ pageSize: 2, pageToken: first.nextPageToken }, asA);
    expect([second.schedules.map((x) => x.id), second.nextPageToken]).toEqual([['zulu'], '']);
    const forged = await failure(schedules.listSchedules({ pageToken: 'bm90LWEtdG9rZW4' }, asA));
    expect([forged.code, fields(forged)]).toEqual([Code.InvalidArgument, ['page_token']]);
    // An edited cursor (the filter hash kept) and another namespace's token are refused before the store.
    const body = JSON.parse(Buffer.from(first.nextPageToken, 'base64url').toString('utf8')) as Record<string, unknown>;
    const edited = await failure(schedules.listSchedules({ pageToken: Buffer.from(JSON.stringify({ ...body, c: "x'; --" })).toString('base64url') }, asA));
    expect([edited.code, fields(edited)]).toEqual([Code.InvalidArgument, ['page_token']]);
    const elsewhere = await failure(schedules.listSchedules({ pageToken: first.nextPageToken }, bearer(keys.b)));
    expect([elsewhere.code, fields(elsewhere)]).toEqual([Code.InvalidArgument, ['page_token']]);

    // Update: only what the mask names; a new spec ticks from now on.
    const updated = (await schedules.updateSchedule({
      scheduleId: 'nightly', updateMask: { paths: ['spec', 'remaining_actions'] },
      schedule: { spec: { intervals: [{ every: { seconds: 3600n, nanos: 0 } }] } },
    }, asA)).schedule!;
    expect(updated.spec).toMatchObject({ cron: [], intervals: [{ every: { seconds: 3600n } }], timeZone: 'UTC' });
    expect(updated.remainingActions).toBeUndefined();
    expect(updated.action).toEqual(created.action);
    expect(updated.info!.futureActionTimes).toHaveLength(10);
    expect(updated.info!.futureActionTimes.map((t) => timestampDate(t).getTime() % 3_600_000)).toEqual(Array(10).fill(0));
    // No more ticks (so none falls during the test); triggers and backfills still start runs.
    const stopped = (await schedules.updateSchedule({ scheduleId: 'nightly', updateMask: { paths: ['remaining_actions'] }, schedule: { remainingActions: 0n } }, asA)).schedule!;
    expect([stopped.remainingActions, stopped.info!.futureActionTimes, stopped.spec]).toEqual([0n, [], updated.spec]);

    const paused = (await schedules.pauseSchedule({ scheduleId: 'nightly', note: 'maintenance (ann)' }, asA)).schedule!;
    expect([paused.paused, paused.note]).toEqual([true, 'maintenance (ann)']);
    const unpaused = (await schedules.unpauseSchedule({ scheduleId: 'nightly', note: 'done (ann)' }, asA)).schedule!;
    expect([unpaused.paused, unpaused.note]).toEqual([false, 'done (ann)']);

    // Trigger and backfill queue starts; the sweeper's ticker starts them, each run labelled.
    const triggered = (await schedules.triggerSchedule({ scheduleId: 'nightly', overlap: ScheduleOverlapPolicy.ALLOW_ALL }, asA)).schedule!;
    expect(triggered.info!.bufferedActions).toBe(1);
    const from = new Date('2026-01-01T00:00:00Z');
    const backfilled = await schedules.backfillSchedule({
      scheduleId: 'nightly', startTime: timestampFromDate(from), endTime: timestampFromDate(new Date('2026-01-01T02:00:00Z')), overlap: ScheduleOverlapPolicy.ALLOW_ALL,
    }, asA);
    expect(backfilled.queued).toBe(3);
    expect(backfilled.schedule!.info!.bufferedActions).toBe(4);
    await sweeper.schedules!.lookOnce();
    const after = (await schedules.getSchedule({ scheduleId: 'nightly' }, asA)).schedule!;
    expect(after.info!.actionCount).toBe(4n);
    expect(after.info!.bufferedActions).toBe(0);
    expect(after.info!.recentActions.map((a) => a.cause).sort()).toEqual([
      ScheduleActionCause.TRIGGER, ScheduleActionCause.BACKFILL, ScheduleActionCause.BACKFILL, ScheduleActionCause.BACKFILL,
    ].sort());
    const listed = await runs.listRuns({ labels: { 'waymark.schedule_id': 'nightly' } }, asA);
    expect(listed.runs).toHaveLength(4);
    const backfillTimes = listed.runs.map((r) => r.labels['waymark.scheduled_at']).filter((t) => t!.startsWith('2026-01-01T0')).sort();
    expect(backfillTimes).toEqual(['2026-01-01T00:00:00.000Z', '2026-01-01T01:00:00.000Z', '2026-01-01T02:00:00.000Z']);
    expect(listed.runs.every((r) => r.namespace === 'team-a' && r.labels.team === 'a' && r.workflowName === 'echo-flow')).toBe(true);
    expect(new Set(after.info!.recentActions.map((a) => a.runId))).toEqual(new Set(listed.runs.map((r) => r.id)));
    // A range already run is not run again (the tick's idempotency key).
    await schedules.backfillSchedule({ scheduleId: 'nightly', startTime: timestampFromDate(from), endTime: timestampFromDate(from), overlap: ScheduleOverlapPolicy.ALLOW_ALL }, asA);
    await sweeper.schedules!.lookOnce();
    expect((await runs.listRuns({ labels: { 'waymark.schedule_id': 'nightly' } }, asA)).runs).toHaveLength(4);

    await schedules.deleteSchedule({ scheduleId: 'nightly' }, asA);
    const gone = await failure(schedules.getSchedule({ scheduleId: 'nightly' }, asA));
    expect([gone.code, reason(gone)]).toEqual([Code.NotFound, 'SCHEDULE_NOT_FOUND']);
    const again = await failure(schedules.deleteSchedule({ scheduleId: 'nightly' }, asA));
    expect([again.code, reason(again)]).toEqual([Code.NotFound, 'SCHEDULE_NOT_FOUND']);
    // Its runs are kept.
    expect((await runs.listRuns({ labels: { 'waymark.schedule_id': 'nightly' } }, asA)).runs).toHaveLength(4);
    const dup = await failure(schedules.createSchedule(everyMinute('alpha'), asA));
    expect([dup.code, reason(dup)]).toEqual([Code.AlreadyExists, 'SCHEDULE_EXISTS']);
  });

  const bad: [string, CreateInit, string[]][] = [
    ['no schedule', {}, ['schedule']],
    ['no id', everyMinute(''), ['schedule.id']],
    ['an id with a slash', everyMinute('a/b'), ['schedule.id']],
    ['no spec', { schedule: { id: 'x', action: { workflow: 'echo-flow', input: json({}) } } }, ['schedule.spec']],
    ['an empty spec', everyMinute('x', { spec: {} }), ['schedule.spec']],
    ['a bad cron expression', everyMinute('x', { spec: { cron: ['61 * * * *'] } }), ['schedule.spec.cron[0]']],
    ['an unknown time zone', everyMinute('x', { spec: { cron: ['* * * * *'], timeZone: 'Mars/Olympus' } }), ['schedule.spec.time_zone']],
    ['an interval under a second', everyMinute('x', { spec: { intervals: [{ every: { seconds: 0n, nanos: 500_000_000 } }] } }), ['schedule.spec.intervals[0].every']],
    ['an end before the start', everyMinute('x', { spec: { cron: ['* * * * *'], startTime: timestampFromDate(new Date('2030-01-02T00:00:00Z')), endTime: timestampFromDate(new Date('2030-01-01T00:00:00Z')) } }), ['schedule.spec.end_time']],
    ['no action', { schedule: { id: 'x', spec: { cron: ['* * * * *'] } } }, ['schedule.action']],
    ['a reserved label', everyMinute('x', { action: { workflow: 'echo-flow', input: json({}), labels: { 'waymark.schedule_id': 'other' } } }), ['schedule.action.labels[waymark.schedule_id]']],
    ['a negative budget', everyMinute('x', { action: { workflow: 'echo-flow', input: json({}), budgetUsd: -1 } }), ['schedule.action.budget_usd']],
    ['a catch-up window under a second', everyMinute('x', { policies: { catchupWindow: { seconds: 0n, nanos: 1_000_000 } } }), ['schedule.policies.catchup_window']],
    ['an unknown overlap policy', everyMinute('x', { policies: { overlap: 42 as ScheduleOverlapPolicy } }), ['schedule.policies.overlap']],
    ['a budget pause without a window', everyMinute('x', { policies: { budgetPause: { limitUsd: 5 } } }), ['schedule.policies.budget_pause.window']],
    ['negative remaining actions', everyMinute('x', { remainingActions: -1n }), ['schedule.remaining_actions']],
  ];
  it.each(bad)('refuses %s: INVALID_ARGUMENT naming the field, nothing written', { timeout: TIMEOUT }, async (_what, request, expected) => {
    const before = await s.rowCounts();
    const err = await failure(schedules.createSchedule(request, bearer(keys.a)));
    expect([err.code, reason(err), fields(err)]).toEqual([Code.InvalidArgument, 'INVALID_REQUEST', expected]);
    expect(await s.rowCounts()).toEqual(before);
  });

  it('refuses input the workflow does not take or over the payload limit, and a workflow nobody serves, writing nothing', { timeout: TIMEOUT }, async () => {
    const before = await s.rowCounts();
    const input = await failure(schedules.createSchedule(everyMinute('x', { action: { workflow: 'ticker', input: json({ ticks: 'many' }) } }), bearer(keys.a)));
    expect([input.code, reason(input)]).toEqual([Code.InvalidArgument, 'INVALID_INPUT']);
    const unknown = await failure(schedules.createSchedule(everyMinute('x', { action: { workflow: 'no-such-workflow', input: json({}) } }), bearer(keys.a)));
    expect([unknown.code, reason(unknown)]).toEqual([Code.NotFound, 'WORKFLOW_NOT_FOUND']);
    const big = await failure(schedules.createSchedule(everyMinute('x', { action: { workflow: 'echo-flow', input: json({ value: 'x'.repeat(1_100_000) }) } }), bearer(keys.a)));
    expect([big.code, reason(big)]).toEqual([Code.ResourceExhausted, 'PAYLOAD_TOO_LARGE']);
    const update = await failure(schedules.updateSchedule({ scheduleId: 'alpha', updateMask: { paths: ['paused'] }, schedule: {} }, bearer(keys.a)));
    expect([update.code, fields(update)]).toEqual([Code.InvalidArgument, ['update_mask']]);
    const backfill = await failure(schedules.backfillSchedule({ scheduleId: 'alpha', startTime: timestampFromDate(new Date(2_000)), endTime: timestampFromDate(new Date(1_000)) }, bearer(keys.a)));
    expect([backfill.code, fields(backfill)]).toEqual([Code.InvalidArgument, ['end_time']]);
    expect(await s.rowCounts()).toEqual(before);
  });

  it('a key of another namespace can neither see nor touch a schedule; its own of the same id is its own', { timeout: TIMEOUT }, async () => {
    await schedules.createSchedule(everyMinute('shared-id', { paused: true }), bearer(keys.a));
    const asB = bearer(keys.b);
    const before = await s.rowCounts();
    const calls: [string, () => Promise<unknown>][] = [
      ['get', () => schedules.getSchedule({ scheduleId: 'shared-id' }, asB)],
      ['update', () => schedules.updateSchedule({ scheduleId: 'shared-id', updateMask: { paths: ['remaining_actions'] }, schedule: {} }, asB)],
      ['pause', () => schedules.pauseSchedule({ scheduleId: 'shared-id' }, asB)],
      ['unpause', () => schedules.unpauseSchedule({ scheduleId: 'shared-id' }, asB)],
      ['trigger', () => schedules.triggerSchedule({ scheduleId: 'shared-id' }, asB)],
      ['backfill', () => schedules.backfillSchedule({ scheduleId: 'shared-id', startTime: timestampFromDate(new Date(0)), endTime: timestampFromDate(new Date(60_000)) }, asB)],
      ['delete', () => schedules.deleteSchedule({ scheduleId: 'shared-id' }, asB)],
    ];
    for (const [what, call] of calls) {
      const err = await failure(call() as Promise<unknown>);
      expect([what, err.code, reason(err)]).toEqual([what, Code.NotFound, 'SCHEDULE_NOT_FOUND']);
    }
    const named = await failure(schedules.getSchedule({ namespace: 'team-a', scheduleId: 'shared-id' }, asB));
    expect([named.code, reason(named)]).toEqual([Code.NotFound, 'NAMESPACE_NOT_FOUND']);
    expect((await schedules.listSchedules({}, asB)).schedules).toEqual([]);
    expect(await s.rowCounts()).toEqual(before);
    // team-b's own schedule of the same id leaves team-a's alone.
    expect((await schedules.createSchedule(everyMinute('shared-id', { paused: true }), asB)).schedule!.namespace).toBe('team-b');
    await schedules.deleteSchedule({ scheduleId: 'shared-id' }, asB);
    expect((await schedules.getSchedule({ scheduleId: 'shared-id' }, bearer(keys.a))).schedule!.paused).toBe(true);
  });

  it('refuses calls without valid credentials, and writes without the runs:write scope; reads need runs:read', { timeout: TIMEOUT }, async () => {
    const before = await s.rowCounts();
    const none = await failure(schedules.createSchedule(everyMinute('nope')));
    expect([none.code, reason(none)]).toEqual([Code.Unauthenticated, 'CREDENTIALS_MISSING']);
    const wrong = await failure(schedules.listSchedules({}, bearer(`wmk_0123456789abcdef_${'x'.repeat(43)}`)));
    expect([wrong.code, reason(wrong)]).toEqual([Code.Unauthenticated, 'CREDENTIALS_INVALID']);
    for (const call of [
      () => schedules.createSchedule(everyMinute('nope'), bearer(keys.aRead)),
      () => schedules.triggerSchedule({ scheduleId: 'alpha' }, bearer(keys.aRead)),
      () => schedules.deleteSchedule({ scheduleId: 'alpha' }, bearer(keys.aRead)),
    ]) {
      const err = await failure(call());
      expect([err.code, reason(err)]).toEqual([Code.PermissionDenied, 'SCOPE_MISSING']);
    }
    expect(await s.rowCounts()).toEqual(before);
    expect((await schedules.getSchedule({ scheduleId: 'alpha' }, bearer(keys.aRead))).schedule!.id).toBe('alpha');
  });
});
