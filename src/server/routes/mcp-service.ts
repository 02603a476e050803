import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { McpService } from '../../gen/waymark/v1/mcp_service_pb.js';
import type { RouteDeps } from './route-deps.js';
import { mcpServerFromProto, mcpServerToProto } from '../convert/convert-mcp.js';
import { withErrorMapping } from '../errors/error-mapping.js';
import { RequestCheck } from '../convert/request-validation.js';
import { unimplemented } from './unimplemented.js';

/* waymark.v1.McpService (docs/mcp.md): each route validates, converts and makes one call to the engine. */

export function mcpServiceImpl(deps: RouteDeps): ServiceImpl<typeof McpService> {
  const { api } = deps;
  const check = () => new RequestCheck(deps.defaultNamespace);

  return {
    async putMcpServer(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      if (!req.server) {
        c.fail('server', 'is required');
        c.done();
      }
      const registration = mcpServerFromProto(c, req.server!);
      c.done();
      const { server, created } = await api.mcpServerPut({ namespace, ...registration });
      return { server: mcpServerToProto(server), created };
    },

    async listMcpServers(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      c.done();
      return { servers: (await api.mcpServerList({ namespace })).map(mcpServerToProto) };
    },

    async removeMcpServer(req) {
      const c = check();
      const namespace = c.namespace(req.namespace);
      if (req.name === '') c.fail('name', 'is required');
      c.done();
      await api.mcpServerRemove({ namespace, name: req.name });
      return {};
    },
  };
}

/** The served McpService: every route, with its errors mapped (error-mapping.ts). */
export function mcpService(deps: RouteDeps): ServiceImpl<typeof McpService> {
  return withErrorMapping(McpService, mcpServiceImpl(deps), deps.logger);
}

/** Registers waymark.v1.McpService; methods missing from `impl` answer UNIMPLEMENTED. */
export function registerMcpService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof McpService>> = {}): void {
  router.service(McpService, { ...unimplemented(McpService), ...impl });
}
