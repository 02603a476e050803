import http2 from 'node:http2';
import { pino } from 'pino';
import { RunEngine } from '../../src/engine/run-engine.js';
import { ReplicaEngine } from '../../src/engine/replica-engine.js';
import { Registry } from '../../src/engine/registry.js';
import type { Tool } from '../../src/engine/author/tool.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import { DEFAULT_LIMITS, type Limits } from '../../src/journal/limits.js';
import { registerRoutes, type RouteDeps } from '../../src/server/routes/register-routes.js';
import { startGrpcServer, type GrpcServer } from '../../src/server/transport/grpc-server.js';
import type { ClientLimits } from '../../src/server/transport/client-limits.js';
import type { TlsFiles } from '../../src/server/transport/tls.js';
import { StreamGate } from '../../src/server/transport/stream-limit.js';
import type { ConsoleAssets } from '../../src/server/transport/console-assets.js';
import { StreamTokens } from '../../src/engine/access/stream-tokens.js';
import { HealthStatus, registerHealthService } from '../../src/server/routes/health-service.js';
import { registerReflectionService } from '../../src/server/routes/reflection-service.js';
import { registerWebhookService, webhookService } from '../../src/server/routes/webhook-service.js';
import { WebhookApi } from '../../src/webhooks/webhook-api.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { FIXTURE_ITEMS, type LogLine } from '../server/api-harness.js';
import { createMigratedDatabase, type MigratedDatabase } from './database.js';

/*
 * The API as `waymark server` wires it (engine, inline executions, stream gate, error mapping) on
 * a real PostgreSQL database and a real HTTP/2 port, in the test's own process: a test reaches it
 * with raw Connect JSON bodies, raw gRPC frames or grpc-js, and can still look inside (the stream
 * gate, the log, the database rows) to prove what a refused request left behind.
 */

export interface ApiServer {
  db: MigratedDatabase;
  store: PostgresStore;
  engine: RunEngine;
  deps: RouteDeps;
  server: GrpcServer;
  /** `127.0.0.1:port`. */
  address: string;
  logs: LogLine[];
  /** Row counts of every table the API writes. */
  rowCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

export async function startApiServer(options: {
  limits?: Partial<Limits>; items?: (Workflow | Tool)[]; streams?: number; prefix?: string;
  /** The URL the store connects with, given the database's (e.g. through a proxy the test controls). */
  storeUrl?: (url: string) => string;
  /** Per-client limits of the server (defaults: the server's). */
  clientLimits?: Partial<ClientLimits>;
  /**
   * Authentication as `waymark server` runs it (API keys on this database, stream tokens with
   * `streamTokenSecret`), or off (the default here: loopback only, for tests of everything else).
   */
  auth?: { streamTokenSecret?: string; keyCacheMs?: number; reflectionPublic?: boolean; corsOrigins?: string[] };
  /** Serve TLS (and mTLS with `clientCaFile`) instead of h2c; `server.url` is then https. */
  tls?: TlsFiles;
  /** The web console's files under /console/ (console-assets.ts). */
  console?: ConsoleAssets;
} = {}): Promise<ApiServer> {
  const db = await createMigratedDatabase(options.prefix ?? 'waymark_api');
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const logs: LogLine[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as LogLine) });
  const store = await PostgresStore.connect({ url: options.storeUrl ? options.storeUrl(db.url) : db.url, applicationName: 'api-server-test', poolSize: 4, limits });
  const registry = new Registry().register(...(options.items ?? FIXTURE_ITEMS));
  const engine = new RunEngine({ store, registry, holder: 'replica-a', leaseTtlMs: 30_000, logger });
  const auth = options.auth;
  const streamTokens = auth?.streamTokenSecret ? new StreamTokens({ secrets: [auth.streamTokenSecret] }) : null;
  const api = new ReplicaEngine({ engine, logger, followPollMs: 50, ...(auth?.keyCacheMs !== undefined ? { keyCacheMs: auth.keyCacheMs } : {}) });
  const deps: RouteDeps = {
    api, logger, limits, defaultNamespace: 'default', streams: new StreamGate(options.streams ?? limits.streamsPerReplica), streamTokens,
  };
  const server = await startGrpcServer({
    host: '127.0.0.1', port: 0, logger, maxRequestBytes: limits.requestBytes,
    routes: (router) => {
      registerRoutes(router, deps);
      // With auth: every service `waymark server` serves, for the access-rule tests.
      if (auth) {
        registerHealthService(router, new HealthStatus({ '': 'SERVING' }));
        registerReflectionService(router);
        registerWebhookService(router, webhookService({ api: new WebhookApi(store, logger), logger, defaultNamespace: 'default', allowPrivate: false }));
      }
    },
    ...(options.clientLimits ? { clientLimits: options.clientLimits } : {}),
    auth: auth ? {
      keys: api.keys, streamTokens, reflectionPublic: auth.reflectionPublic ?? false, defaultNamespace: 'default', runVisible: (p) => api.runVisible(p),
    } : 'off',
    ...(options.console ? { console: options.console } : {}),
    ...(auth?.corsOrigins ? { corsOrigins: auth.corsOrigins } : {}),
    ...(options.tls ? { tls: options.tls } : {}),
  });
  return {
    db, store, engine, deps, server, address: server.address, logs,
    async rowCounts() {
      const { rows } = await db.admin.query<Record<string, number>>(`SELECT
        (SELECT count(*)::int FROM runs) AS runs, (SELECT count(*)::int FROM journal) AS journal,
        (SELECT count(*)::int FROM signal_inbox) AS inbox, (SELECT count(*)::int FROM suspension_deadlines) AS deadlines,
        (SELECT count(*)::int FROM webhook_endpoints) AS webhook_endpoints, (SELECT count(*)::int FROM webhook_deliveries) AS webhook_deliveries,
        (SELECT count(*)::int FROM api_keys) AS api_keys, (SELECT count(*)::int FROM api_keys WHERE revoked_at IS NOT NULL) AS revoked_keys,
        (SELECT count(*)::int FROM remote_tools) AS remote_tools, (SELECT count(*)::int FROM remote_workers) AS remote_workers,
        (SELECT count(*)::int FROM remote_tasks) AS remote_tasks, (SELECT count(*)::int FROM mcp_servers) AS mcp_servers,
        (SELECT count(*)::int FROM schedules) AS schedules, (SELECT coalesce(sum(revision), 0)::int FROM schedules) AS schedule_revisions`);
      return rows[0]!;
    },
    async close() {
      await server.close(500);
      await deps.api.stop({ graceMs: 2_000 });
      await store.close();
      await db.drop();
    },
  };
}

export interface RawResponse {
  status: number;
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/2 request with a raw body (a Connect JSON text, or gRPC frames), over its own connection. */
export function rawRequest(address: string, path: string, headers: Record<string, string>, body: Uint8Array): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://${address}`);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ':path': path, ...headers });
    const chunks: Buffer[] = [];
    let status = 0;
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => {
      status = Number(h[':status']);
      responseHeaders = h;
    });
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', (err) => {
      session.close();
      reject(err);
    });
    req.on('end', () => {
      session.close();
      resolve({ status, headers: responseHeaders, trailers, body: Buffer.concat(chunks) });
    });
    req.end(Buffer.from(body));
  });
}

/** A Connect unary call with a JSON body as written (so it can carry what no typed client would send). */
export async function connectJson(
  address: string, method: { parent: { typeName: string }; name: string }, body: string, headers: Record<string, string> = {},
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await rawRequest(address, `/${method.parent.typeName}/${method.name}`, { 'content-type': 'application/json', ...headers }, Buffer.from(body, 'utf8'));
  const text = res.body.toString('utf8');
  try {
    return { status: res.status, json: JSON.parse(text || '{}') as Record<string, unknown> };
  } catch {
    return { status: res.status, json: { code: `not JSON (HTTP ${res.status}): ${text.slice(0, 200)}` } };
  }
}

/** A gRPC length-prefixed frame around `message` (uncompressed). */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** A gRPC call with raw frames; the status is in the trailers (or the headers, for a trailers-only answer). */
export async function grpcRaw(
  address: string, method: { parent: { typeName: string }; name: string }, body: Uint8Array, headers: Record<string, string> = {},
): Promise<RawResponse & { grpcStatus: number; grpcMessage: string }> {
  const res = await rawRequest(address, `/${method.parent.typeName}/${method.name}`, { 'content-type': 'application/grpc', te: 'trailers', ...headers }, body);
  const source = res.trailers['grpc-status'] !== undefined ? res.trailers : res.headers;
  return { ...res, grpcStatus: Number(source['grpc-status']), grpcMessage: decodeURIComponent(String(source['grpc-message'] ?? '')) };
}
