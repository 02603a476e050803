import type { ConnectRouter } from '@connectrpc/connect';
import { pino } from 'pino';
import { startGrpcServer, type GrpcServer } from '../../src/server/transport/grpc-server.js';
import { HealthStatus, registerHealthService } from '../../src/server/routes/health-service.js';
import type { ClientLimits } from '../../src/server/transport/client-limits.js';
import type { TlsFiles } from '../../src/server/transport/tls.js';
import type { Interceptor } from '@connectrpc/connect';
import type { SessionLimits } from '../../src/server/transport/http2-sessions.js';
import { registerReflectionService } from '../../src/server/routes/reflection-service.js';
import { registerRunService } from '../../src/server/routes/run-service.js';
import { registerSignalService } from '../../src/server/routes/signal-service.js';
import { registerAdminService } from '../../src/server/routes/admin-service.js';

export type LogLine = { level: number; msg: string } & Record<string, unknown>;

export interface TestServer {
  server: GrpcServer;
  health: HealthStatus;
  /** Every line the server logged, parsed. */
  logs: LogLine[];
}

/** Every service the server exposes today, as the composition root registers them. */
export function allServices(router: ConnectRouter, health: HealthStatus): void {
  registerRunService(router);
  registerSignalService(router);
  registerAdminService(router);
  registerHealthService(router, health);
  registerReflectionService(router);
}

/** A real HTTP/2 server on 127.0.0.1 and a free port. Close it with `server.close(graceMs)`. */
export async function startTestServer(
  options: { routes?: (router: ConnectRouter, health: HealthStatus) => void; maxRequestBytes?: number; sessionLimits?: Partial<SessionLimits>; clientLimits?: Partial<ClientLimits>;
    tls?: TlsFiles; interceptors?: Interceptor[];
  } = {},
): Promise<TestServer> {
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) });
  const health = new HealthStatus({ '': 'SERVING', 'waymark.v1.RunService': 'SERVING' });
  const routes = options.routes ?? allServices;
  const server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger,
    maxRequestBytes: options.maxRequestBytes ?? 4 * 1024 * 1024,
    ...(options.sessionLimits ? { sessionLimits: options.sessionLimits } : {}),
    ...(options.clientLimits ? { clientLimits: options.clientLimits } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
    ...(options.interceptors ? { interceptors: options.interceptors } : {}),
    routes: (router) => routes(router, health),
    // Transport tests: no API is wired, so no key exists; loopback only (the server refuses otherwise).
    auth: 'off',
  });
  return { server, health, logs };
}
