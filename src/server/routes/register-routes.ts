import type { ConnectRouter } from '@connectrpc/connect';
import { adminService, registerAdminService } from './admin-service.js';
import type { RouteDeps } from './route-deps.js';
import { flowService, registerFlowService } from './flow-service.js';
import { mcpService, registerMcpService } from './mcp-service.js';
import { registerRunService, runService } from './run-service.js';
import { registerScheduleService, scheduleService } from './schedule-service.js';
import { registerSignalService, signalService } from './signal-service.js';
import { registerWorkerService, workerService } from './worker-service.js';

export type { RouteDeps } from './route-deps.js';

/** Registers the Waymark API (RunService, SignalService, FlowService, AdminService, WorkerService, McpService and ScheduleService) served by `deps`. */
export function registerRoutes(router: ConnectRouter, deps: RouteDeps): void {
  registerRunService(router, runService(deps));
  registerSignalService(router, signalService(deps));
  registerFlowService(router, flowService(deps), Math.min(deps.limits.requestBytes, deps.limits.definitions.flowBytes));
  registerAdminService(router, adminService(deps));
  registerWorkerService(router, workerService(deps));
  registerMcpService(router, mcpService(deps));
  registerScheduleService(router, scheduleService(deps));
}
