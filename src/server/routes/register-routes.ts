import type { ConnectRouter } from '@connectrpc/connect';
import { adminService, registerAdminService } from './admin-service.js';
import type { RouteDeps } from './route-deps.js';
import { flowService, registerFlowService } from './flow-service.js';
import { mcpService, registerMcpService } from './mcp-service.js';
import { registerRunService, runService } from './run-service.js';
import { registerScheduleService, scheduleService } from './schedule-service.js';
import { registerSignalService, signalService } from './signal-service.js';
import { registerWorkerService, workerService } from './worker-service.js';
import { AdminService } from '../../gen/waymark/v1/admin_service_pb.js';
import { FlowService } from '../../gen/waymark/v1/flow_service_pb.js';
import { McpService } from '../../gen/waymark/v1/mcp_service_pb.js';
import { RunService } from '../../gen/waymark/v1/run_service_pb.js';
import { ScheduleService } from '../../gen/waymark/v1/schedule_service_pb.js';
import { SignalService } from '../../gen/waymark/v1/signal_service_pb.js';
import { WebhookService } from '../../gen/waymark/v1/webhook_service_pb.js';
import { WorkerService } from '../../gen/waymark/v1/worker_service_pb.js';

export type { RouteDeps } from './route-deps.js';

/**
 * Every Waymark service `waymark server` serves (registerRoutes' and WebhookService), by full
 * name: the services grpc.health.v1 reports on, so a health check per service answers for each.
 */
export const API_SERVICES: readonly string[] = [
  RunService, SignalService, FlowService, AdminService, WorkerService, McpService, ScheduleService, WebhookService,
].map((s) => s.typeName);

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
