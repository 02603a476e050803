import { status } from '@grpc/grpc-js';
import type * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Health, HealthCheckResponse_ServingStatus as ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { startTestServer, type TestServer } from './test-server.js';

describe('grpc.health.v1.Health over HTTP/2, called with grpc-js', () => {
  let t: TestServer;
  let client: grpc.Client;

  beforeAll(async () => {
    t = await startTestServer();
    client = grpcJsClient(t.server.address);
  });
  afterAll(async () => {
    client.close();
    await t.server.close(1000);
  });

  it('reports the server as a whole SERVING', async () => {
    const res = await unaryCall(client, Health.method.check, { service: '' });
    expect(res.status).toBe(ServingStatus.SERVING);
  });

  it('reports a service NOT_SERVING once it is set so, and SERVING again after', async () => {
    t.health.set('waymark.v1.RunService', 'NOT_SERVING');
    expect((await unaryCall(client, Health.method.check, { service: 'waymark.v1.RunService' })).status).toBe(ServingStatus.NOT_SERVING);
    t.health.set('waymark.v1.RunService', 'SERVING');
    expect((await unaryCall(client, Health.method.check, { service: 'waymark.v1.RunService' })).status).toBe(ServingStatus.SERVING);
  });

  it('answers NOT_FOUND for a service it keeps no status for', async () => {
    await expect(unaryCall(client, Health.method.check, { service: 'no.such.Service' })).rejects.toMatchObject({ code: status.NOT_FOUND });
  });

  it('lists every status', async () => {
    const res = await unaryCall(client, Health.method.list, {});
    expect(Object.keys(res.statuses).sort()).toEqual(['', 'waymark.v1.RunService']);
  });

  it('streams status changes to a watcher, and SERVICE_UNKNOWN for a service set later', async () => {
    const watch = serverStreamCall(client, Health.method.watch, { service: 'waymark.v1.SignalService' });
    expect((await watch.next()).status).toBe(ServingStatus.SERVICE_UNKNOWN);
    t.health.set('waymark.v1.SignalService', 'SERVING');
    expect((await watch.next()).status).toBe(ServingStatus.SERVING);
    t.health.set('waymark.v1.SignalService', 'NOT_SERVING');
    expect((await watch.next()).status).toBe(ServingStatus.NOT_SERVING);
    watch.call.cancel();
    expect((await watch.status).code).toBe(status.CANCELLED);
  });
});

describe('a draining server', () => {
  it('sends watchers the last status, then ends their streams with UNAVAILABLE', async () => {
    const t = await startTestServer();
    const client = grpcJsClient(t.server.address);
    try {
      const watch = serverStreamCall(client, Health.method.watch, { service: '' });
      expect((await watch.next()).status).toBe(ServingStatus.SERVING);
      t.health.set('', 'NOT_SERVING');
      // Closing with a long grace period: the stream must not hold the shutdown for it.
      const started = performance.now();
      await t.server.close(30_000);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect((await watch.next()).status).toBe(ServingStatus.NOT_SERVING);
      expect((await watch.status).code).toBe(status.UNAVAILABLE);
    } finally {
      client.close();
    }
  });
});
