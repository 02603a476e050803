import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { SignalService } from '../../gen/waymark/v1/signal_service_pb.js';
import type { Json } from '../../journal/run.js';
import type { RouteDeps } from './route-deps.js';
import { callerKey, callerKeyId } from '../auth/auth.js';
import { approvalStatesFromProto, approvalToProto } from '../convert/convert-approval.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { MAX_INT32, PAGE_SIZES, RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.SignalService: validate, convert, delegate (as run-service.ts). A delivery or decision
 * that resolves a wait makes a parked run PENDING; the engine then executes it on this replica at
 * once (no queue hop) unless an executor claimed it first.
 */

const APPROVAL_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):(\d{1,10})$/i;

export function signalServiceImpl(deps: RouteDeps): ServiceImpl<typeof SignalService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);
  const approvalIdOf = (c: RequestCheck, id: string): string => {
    if (id === '') c.fail('id', 'is required');
    else if (!APPROVAL_ID.test(id) || Number(APPROVAL_ID.exec(id)![2]) > MAX_INT32) c.fail('id', 'must be an approval id "<run_id>:<seq>" as ListApprovals or GetRun return it');
    return id;
  };

  return {
    async sendSignal(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId);
      const name = c.key('name', req.name, { required: true });
      const signalId = c.idOrGenerated('signal_id', req.signalId);
      const payload = c.json('payload', req.payload);
      c.done();
      c.payload('payload', payload);
      const r = await api.signalSend({ runId, namespace, name, payload, signalId });
      const applied = r.applied && !r.duplicate;
      const reason = r.duplicate ? 'duplicate' : r.buffered ? 'buffered' : applied ? '' : (r.reason ?? 'already_resolved');
      return { applied, reason, seq: BigInt(r.entry?.seq ?? 0), buffered: r.buffered };
    },

    async listApprovals(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const runId = c.runId('run_id', req.runId, { required: false });
      const workflowName = c.workflow('workflow', req.workflow, { required: false });
      const labels = c.labels('labels', req.labels);
      const { states, invalid, onlyUnspecified } = approvalStatesFromProto(req.states);
      if (invalid.length) c.fail('states', `unknown state values ${invalid.join(', ')}`);
      const pageSize = c.pageSize('page_size', req.pageSize, PAGE_SIZES.approvals);
      c.done();
      const page = await api.approvalList({
        namespace, pageSize, pageToken: req.pageToken, labels, ...(runId ? { runId } : {}), ...(workflowName ? { workflowName } : {}),
        // UNSPECIFIED only matches nothing (an empty state list); no states at all: PENDING ones.
        ...(onlyUnspecified ? { states: [] } : states.length ? { states } : {}),
      });
      return { approvals: page.approvals.map(approvalToProto), nextPageToken: page.nextPageToken };
    },

    async getApproval(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const approvalId = approvalIdOf(c, req.id);
      c.done();
      return { approval: approvalToProto(await api.approvalGet({ namespace, approvalId })) };
    },

    async decideApproval(req, ctx) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const approvalId = approvalIdOf(c, req.id);
      const by = c.text('by', req.by, { required: true, max: 256 });
      const comment = c.text('comment', req.comment);
      const requestId = c.idOrGenerated('request_id', req.requestId);
      const payload = c.json('payload', req.payload);
      if (payload !== null && (typeof payload !== 'object' || Array.isArray(payload))) c.fail('payload', 'must be a JSON object (its fields join the decision)');
      c.done();
      c.payload('payload', payload);
      const r = await api.approvalDecide({
        namespace, approvalId, approve: req.approve, by, comment: comment || null, requestId, keyId: callerKeyId(ctx.values.get(callerKey)),
        ...(payload !== null ? { payload: payload as Record<string, Json> } : {}),
      });
      const applied = r.applied && !r.duplicate;
      return { approval: approvalToProto(r.approval), applied, reason: r.duplicate ? 'duplicate' : applied ? '' : 'already_resolved' };
    },
  };
}

/** The served SignalService: every route, with its errors mapped (error-mapping.ts). */
export function signalService(deps: RouteDeps): ServiceImpl<typeof SignalService> {
  return withErrorMapping(SignalService, signalServiceImpl(deps), deps.logger);
}

/**
 * Registers waymark.v1.SignalService. Methods missing from `impl` answer UNIMPLEMENTED, so
 * transport tests can serve one RPC; the composition root passes `signalService(deps)`.
 */
export function registerSignalService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof SignalService>> = {}): void {
  router.service(SignalService, { ...unimplemented(SignalService), ...impl });
}
