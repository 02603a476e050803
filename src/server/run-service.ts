import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { RunService } from '../gen/waymark/v1/run_service_pb.js';
import { unimplemented } from './unimplemented.js';

/**
 * Registers waymark.v1.RunService. Methods missing from `impl` answer UNIMPLEMENTED, so the API
 * can be wired one RPC at a time: the composition root passes the real implementation here.
 */
export function registerRunService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof RunService>> = {}): void {
  router.service(RunService, { ...unimplemented(RunService), ...impl });
}
