import { timestampDate } from '@bufbuild/protobuf/wkt';
import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { ScheduleService } from '../../gen/waymark/v1/schedule_service_pb.js';
import type { ScheduleEdit } from '../../engine/index.js';
import type { Json } from '../../journal/run.js';
import type { RouteDeps } from './route-deps.js';
import {
  actionFromProto, overlapFromProto, policiesFromProto, remainingFromProto, scheduleId, scheduleToProto, specFromProto,
} from '../convert/convert-schedule.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { PAGE_SIZES, RequestCheck } from '../convert/request-validation.js';
import { assertPayloadSize } from '../../journal/limits.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.ScheduleService (docs/schedules.md): each route validates and converts
 * (convert-schedule.ts), then makes one call to the engine's schedules (engine/schedules/schedules.ts).
 * No route starts a run: trigger and backfill queue starts the sweeper's ticker makes.
 */

const UPDATABLE = ['spec', 'action', 'policies', 'remaining_actions'] as const;

export function scheduleServiceImpl(deps: RouteDeps): ServiceImpl<typeof ScheduleService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);
  // Each tick's run carries the input: one the store would refuse at every tick is refused here, once.
  const input = (value: Json) => {
    check().payload('schedule.action.input', value);
    assertPayloadSize('schedule.action.input', value, deps.limits.payloadBytes);
  };
  const key = (c: RequestCheck, req: { namespace: string; scheduleId: string }) => ({
    namespace: c.namespace(req.namespace), id: scheduleId(c, 'schedule_id', req.scheduleId),
  });

  return {
    async createSchedule(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const s = req.schedule;
      if (!s) {
        c.fail('schedule', 'is required');
        c.done();
      }
      const id = scheduleId(c, 'schedule.id', s!.id);
      const spec = specFromProto(c, 'schedule.spec', s!.spec);
      const action = actionFromProto(c, 'schedule.action', s!.action);
      const policies = policiesFromProto(c, 'schedule.policies', s!.policies);
      const remainingActions = remainingFromProto(c, 'schedule.remaining_actions', s!.remainingActions);
      const note = c.text('schedule.note', s!.note);
      c.done();
      input(action.input);
      return { schedule: scheduleToProto(await api.schedules.create({ namespace, id, spec, action, policies, paused: s!.paused, note, remainingActions })) };
    },

    async getSchedule(req) {
      const c = check();
      const k = key(c, req);
      c.done();
      return { schedule: scheduleToProto(await api.schedules.get(k)) };
    },

    async listSchedules(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const pageSize = c.pageSize('page_size', req.pageSize, PAGE_SIZES.schedules);
      c.done();
      const page = await api.schedules.list({ namespace, pageSize, pageToken: req.pageToken });
      return { schedules: page.schedules.map(scheduleToProto), nextPageToken: page.nextPageToken };
    },

    async updateSchedule(req) {
      const c = check();
      const k = key(c, req);
      const paths = req.updateMask?.paths.length ? req.updateMask.paths : [...UPDATABLE];
      for (const p of paths) {
        if (!(UPDATABLE as readonly string[]).includes(p)) c.fail('update_mask', `"${p.slice(0, 64)}" cannot be updated; name any of ${UPDATABLE.join(', ')}`);
      }
      const s = req.schedule;
      if (!s) c.fail('schedule', 'is required: the new values of the fields update_mask names');
      const edit: ScheduleEdit = { ...k };
      if (s && paths.includes('spec')) edit.spec = specFromProto(c, 'schedule.spec', s.spec);
      if (s && paths.includes('action')) edit.action = actionFromProto(c, 'schedule.action', s.action);
      if (s && paths.includes('policies')) edit.policies = policiesFromProto(c, 'schedule.policies', s.policies);
      if (s && paths.includes('remaining_actions')) edit.remainingActions = remainingFromProto(c, 'schedule.remaining_actions', s.remainingActions);
      c.done();
      if (edit.action) input(edit.action.input);
      return { schedule: scheduleToProto(await api.schedules.update(edit)) };
    },

    async pauseSchedule(req) {
      const c = check();
      const k = key(c, req);
      const note = c.text('note', req.note);
      c.done();
      return { schedule: scheduleToProto(await api.schedules.pause({ ...k, note })) };
    },

    async unpauseSchedule(req) {
      const c = check();
      const k = key(c, req);
      const note = c.text('note', req.note);
      c.done();
      return { schedule: scheduleToProto(await api.schedules.unpause({ ...k, note })) };
    },

    async triggerSchedule(req) {
      const c = check();
      const k = key(c, req);
      const overlap = overlapFromProto(c, 'overlap', req.overlap);
      c.done();
      return { schedule: scheduleToProto(await api.schedules.trigger({ ...k, overlap })) };
    },

    async backfillSchedule(req) {
      const c = check();
      const k = key(c, req);
      const overlap = overlapFromProto(c, 'overlap', req.overlap);
      if (!req.startTime) c.fail('start_time', 'is required');
      if (!req.endTime) c.fail('end_time', 'is required');
      const start = req.startTime ? timestampDate(req.startTime) : new Date(0);
      const end = req.endTime ? timestampDate(req.endTime) : new Date(0);
      if (Number.isNaN(start.getTime())) c.fail('start_time', 'must be a time');
      if (Number.isNaN(end.getTime())) c.fail('end_time', 'must be a time');
      else if (end.getTime() < start.getTime()) c.fail('end_time', 'must not be before start_time');
      c.done();
      const { queued, ...view } = await api.schedules.backfill({ ...k, start, end, overlap });
      return { schedule: scheduleToProto(view), queued };
    },

    async deleteSchedule(req) {
      const c = check();
      const k = key(c, req);
      c.done();
      await api.schedules.delete(k);
      return {};
    },
  };
}

/** The served ScheduleService: every route, with its errors mapped (error-mapping.ts). */
export function scheduleService(deps: RouteDeps): ServiceImpl<typeof ScheduleService> {
  return withErrorMapping(ScheduleService, scheduleServiceImpl(deps), deps.logger);
}

/** Registers waymark.v1.ScheduleService; methods missing from `impl` answer UNIMPLEMENTED. */
export function registerScheduleService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof ScheduleService>> = {}): void {
  router.service(ScheduleService, { ...unimplemented(ScheduleService), ...impl });
}
