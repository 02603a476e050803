import type { ConnectRouter, ServiceImpl } from '@connectrpc/connect';
import { SignalService } from '../gen/waymark/v1/signal_service_pb.js';
import { unimplemented } from './unimplemented.js';

/**
 * Registers waymark.v1.SignalService. Methods missing from `impl` answer UNIMPLEMENTED, so the API
 * can be wired one RPC at a time: the composition root passes the real implementation here.
 */
export function registerSignalService(router: ConnectRouter, impl: Partial<ServiceImpl<typeof SignalService>> = {}): void {
  router.service(SignalService, { ...unimplemented(SignalService), ...impl });
}
