import type { ConnectRouter } from '@connectrpc/connect';
import { adminService, registerAdminService } from './admin-service.js';
import type { ApiDeps } from './api-deps.js';
import { flowService, registerFlowService } from './flow-service.js';
import { registerRunService, runService } from './run-service.js';
import { registerSignalService, signalService } from './signal-service.js';
import { registerWorkerService, workerService } from './worker-service.js';

export type { ApiDeps } from './api-deps.js';

/** Registers the Waymark API (RunService, SignalService, FlowService, AdminService and WorkerService) served by `deps`. */
export function registerApi(router: ConnectRouter, deps: ApiDeps): void {
  registerRunService(router, runService(deps));
  registerSignalService(router, signalService(deps));
  registerFlowService(router, flowService(deps));
  registerAdminService(router, adminService(deps));
  registerWorkerService(router, workerService(deps));
}
