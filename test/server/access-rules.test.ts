import { readdirSync } from 'node:fs';
import path from 'node:path';
import type { DescService } from '@bufbuild/protobuf';
import { Code, ConnectError } from '@connectrpc/connect';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { describe, expect, it } from 'vitest';
import { Health } from '../../src/gen/grpc/health/v1/health_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { ACCESS_RULES } from '../../src/server/auth/access-rules.js';
import { registerAdminService } from '../../src/server/routes/admin-service.js';
import type { AuthOptions } from '../../src/server/auth/auth.js';
import { startGrpcServer } from '../../src/server/transport/grpc-server.js';

/*
 * The access table (src/server/auth/access-rules.ts) names every method of every service the generated
 * code defines, read from the descriptors, and nothing else: a new RPC cannot be served before its
 * rule is written. A method served without a rule is refused (fail closed).
 */

async function generatedServices(): Promise<DescService[]> {
  const root = path.resolve('src/gen');
  const files = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('_pb.ts'));
  const services: DescService[] = [];
  for (const file of files) {
    const mod = (await import(path.join(root, file))) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (value && typeof value === 'object' && (value as { kind?: unknown }).kind === 'service') services.push(value as DescService);
    }
  }
  return services;
}

const denyAll = (reflectionPublic: boolean): AuthOptions => ({
  keys: { verify: async () => ({ ok: false, why: 'invalid' }), verifyClientCertificate: async () => ({ ok: false, why: 'invalid' }) }, streamTokens: null, reflectionPublic, defaultNamespace: 'default', runVisible: async () => false,
});

describe('ACCESS_RULES', () => {
  it('has one rule per method of every generated service, and no other', async () => {
    const services = await generatedServices();
    expect(services.map((s) => s.typeName).sort()).toEqual([
      'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection',
      'waymark.v1.AdminService', 'waymark.v1.FlowService', 'waymark.v1.McpService', 'waymark.v1.RunService', 'waymark.v1.ScheduleService', 'waymark.v1.SignalService', 'waymark.v1.WebhookService',
      'waymark.v1.WorkerService',
    ]);
    const methods = services.flatMap((s) => s.methods.map((m) => `${s.typeName}/${m.name}`)).sort();
    expect(Object.keys(ACCESS_RULES).sort()).toEqual(methods);
  });

  it('refuses, as an internal error, a method served without a rule', async () => {
    const { pino } = await import('pino');
    const original = ACCESS_RULES['waymark.v1.AdminService/ListKeys'];
    const rules = ACCESS_RULES as Record<string, unknown>;
    delete rules['waymark.v1.AdminService/ListKeys'];
    const s = await startGrpcServer({
      host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }), maxRequestBytes: 1 << 20, auth: denyAll(false),
      routes: (router) => registerAdminService(router, { listKeys: async () => ({ keys: [] }) }),
    });
    try {
      const { AdminService } = await import('../../src/gen/waymark/v1/admin_service_pb.js');
      const err = await createClient(AdminService, createConnectTransport({ baseUrl: s.url, httpVersion: '2' })).listKeys({}).then(() => null, (e: unknown) => ConnectError.from(e));
      expect(err?.code).toBe(Code.Internal);
    } finally {
      rules['waymark.v1.AdminService/ListKeys'] = original;
      await s.close(100);
    }
  });

  it('reflection is public only with the setting; health always is', async () => {
    for (const reflectionPublic of [false, true]) {
      const { pino } = await import('pino');
      const { HealthStatus, registerHealthService } = await import('../../src/server/routes/health-service.js');
      const { registerReflectionService } = await import('../../src/server/routes/reflection-service.js');
      const { ServerReflection } = await import('../../src/gen/grpc/reflection/v1/reflection_pb.js');
      const s = await startGrpcServer({
        host: '127.0.0.1', port: 0, logger: pino({ level: 'silent' }), maxRequestBytes: 1 << 20, auth: denyAll(reflectionPublic),
        routes: (router) => {
          registerHealthService(router, new HealthStatus({ '': 'SERVING' }));
          registerReflectionService(router);
          router.service(RunService, {});
        },
      });
      try {
        const transport = createConnectTransport({ baseUrl: s.url, httpVersion: '2' });
        expect((await createClient(Health, transport).check({})).status).toBe(1);
        async function* one() { yield { listServices: '' } as never; }
        const reflected = await (async () => {
          try {
            for await (const _ of createClient(ServerReflection, createGrpcTransport({ baseUrl: s.url })).serverReflectionInfo(one())) break;
            return 'served';
          } catch (err) {
            return Code[ConnectError.from(err).code];
          }
        })();
        expect(reflected).toBe(reflectionPublic ? 'served' : 'Unauthenticated');
      } finally {
        await s.close(100);
      }
    }
  });

  it('a server with authentication off refuses to listen on a non-loopback address', async () => {
    const { pino } = await import('pino');
    await expect(startGrpcServer({ host: '0.0.0.0', port: 0, logger: pino({ level: 'silent' }), maxRequestBytes: 1 << 20, auth: 'off', routes: () => undefined }))
      .rejects.toThrow(/authentication off/);
  });
});
