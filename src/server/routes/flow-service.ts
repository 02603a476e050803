import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { FlowService } from '../../gen/waymark/v1/flow_service_pb.js';
import type { RouteDeps } from './route-deps.js';
import { flowFromProto, flowValues, flowVersionToProto } from '../convert/convert-flow.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/*
 * waymark.v1.FlowService (docs/flows.md): each route validates the request's own fields, converts
 * and makes one call to the engine; the flow itself is validated by the engine
 * (engine/flow/flow-validation.ts), whose InvalidFlowError names each field under `flow.`.
 */

const VERSION = /^[1-9][0-9]{0,8}$/;

export function flowServiceImpl(deps: RouteDeps): ServiceImpl<typeof FlowService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);

  return {
    async registerFlow(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      if (!req.flow) c.fail('flow', 'is required');
      else {
        for (const { field, value } of flowValues(req.flow)) c.forbiddenKeys(field, c.json(field, value));
      }
      c.done();
      const definition = flowFromProto(req.flow!);
      c.payload('flow', definition as never);
      const { flow, created } = await api.flowRegister({ namespace, flow: definition });
      return { flow: flowVersionToProto(flow), created };
    },

    async getFlow(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      const name = c.workflow('name', req.name);
      if (req.version !== '' && !VERSION.test(req.version)) c.fail('version', 'must be a version number ("1", "2", ...) or empty for the latest');
      c.done();
      const flow = await api.flowGet({ namespace, name, ...(req.version ? { version: Number(req.version) } : {}) });
      return { flow: flowVersionToProto(flow) };
    },

    async listFlows(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      return { flows: (await api.flowList({ namespace })).map(flowVersionToProto) };
    },
  };
}

/** The served FlowService: every route, with its errors mapped (error-mapping.ts). */
export function flowService(deps: RouteDeps): ServiceImpl<typeof FlowService> {
  return withErrorMapping(FlowService, flowServiceImpl(deps), deps.logger);
}

/**
 * Registers waymark.v1.FlowService; methods missing from `impl` answer UNIMPLEMENTED. Its requests
 * are read up to `maxRequestBytes` (WAYMARK_MAX_FLOW_BYTES): decoding a message costs about a
 * microsecond a byte, so a flow over the limit is refused (REQUEST_TOO_LARGE) before it is decoded.
 */
export function registerFlowService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof FlowService>> = {}, maxRequestBytes?: number): void {
  router.service(FlowService, { ...unimplemented(FlowService), ...impl }, maxRequestBytes === undefined ? {} : { readMaxBytes: maxRequestBytes });
}
