import { ConnectError } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { ErrorInfoSchema, QuotaFailureSchema, RetryInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { Health, HealthCheckResponse_ServingStatus } from '../../src/gen/grpc/health/v1/health_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { registerHealthService } from '../../src/server/routes/health-service.js';
import { registerRunService } from '../../src/server/routes/run-service.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { grpcDetail } from './grpc-status.js';
import { startTestServer } from './test-server.js';

/*
 * Per-client limits (issue 16, "Build"): a client (the peer address) over its request rate or its
 * open streams is refused with RESOURCE_EXHAUSTED, ErrorInfo, QuotaFailure and RetryInfo, before
 * the handler runs. Real HTTP/2, @grpc/grpc-js.
 */

function countingServer(clientLimits: { ratePerSecond?: number; burst?: number; streams?: number }) {
  const runs = { unary: 0, streams: 0 };
  return startTestServer({
    clientLimits,
    routes: (router, health) => {
      registerHealthService(router, health);
      registerRunService(router, {
        getRun: (req) => {
          runs.unary++;
          return { run: { id: req.runId } };
        },
        streamRunEvents: async function* (_req, ctx) {
          runs.streams++;
          yield { event: { seq: 0n } };
          await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ConnectError.from(ctx.signal.reason))));
        },
      });
    },
  }).then((t) => ({ t, runs }));
}

describe('per-client limits', () => {
  it('a client over its request rate is refused with RATE_LIMITED, QuotaFailure and RetryInfo; health checks are not counted', async () => {
    const { t, runs } = await countingServer({ ratePerSecond: 1, burst: 3 });
    const client = grpcJsClient(t.server.address);
    try {
      for (let i = 0; i < 3; i++) await unaryCall(client, RunService.method.getRun, { runId: `r${i}` });
      const err = (await unaryCall(client, RunService.method.getRun, { runId: 'r3' }).catch((e: unknown) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(grpcDetail(err, ErrorInfoSchema)).toMatchObject({ reason: 'RATE_LIMITED', metadata: { client: '127.0.0.1', limit: 'WAYMARK_CLIENT_RATE_LIMIT' } });
      expect(grpcDetail(err, QuotaFailureSchema)?.violations[0]?.subject).toBe('client:127.0.0.1');
      const delay = grpcDetail(err, RetryInfoSchema)?.retryDelay;
      expect(Number(delay?.seconds ?? 0n) * 1000 + (delay?.nanos ?? 0) / 1e6).toBeGreaterThan(0);
      expect(runs.unary).toBe(3);
      for (let i = 0; i < 5; i++) {
        expect((await unaryCall(client, Health.method.check, {})).status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      }
    } finally {
      client.close();
      await t.server.close(1_000);
    }
  });

  it('a client holding its limit of open streams is refused with CLIENT_STREAM_LIMIT; closing one frees it', async () => {
    const { t, runs } = await countingServer({ streams: 2 });
    const client = grpcJsClient(t.server.address);
    try {
      const open = [0, 1].map(() => serverStreamCall(client, RunService.method.streamRunEvents, { runId: 'x' }));
      await Promise.all(open.map((s) => s.next()));
      const third = serverStreamCall(client, RunService.method.streamRunEvents, { runId: 'x' });
      const status = await third.status;
      expect(status.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(grpcDetail(status, ErrorInfoSchema)).toMatchObject({ reason: 'CLIENT_STREAM_LIMIT', metadata: { limit_streams: '2' } });
      expect(grpcDetail(status, QuotaFailureSchema)?.violations[0]?.subject).toBe('client:127.0.0.1');
      expect(grpcDetail(status, RetryInfoSchema)?.retryDelay).toBeDefined();
      expect(runs.streams).toBe(2);
      // Unary calls are not streams: still served.
      await unaryCall(client, RunService.method.getRun, { runId: 'u' });
      open[0]!.call.cancel();
      await open[0]!.status;
      // The server learns of the cancel a moment later; then the slot is free again.
      let again = serverStreamCall(client, RunService.method.streamRunEvents, { runId: 'x' });
      for (let i = 0; i < 50 && (await Promise.race([again.next().then(() => false), again.status.then(() => true)])); i++) {
        again = serverStreamCall(client, RunService.method.streamRunEvents, { runId: 'x' });
      }
      expect(runs.streams).toBe(3);
      again.call.cancel();
      open[1]!.call.cancel();
    } finally {
      client.close();
      await t.server.close(1_000);
    }
  });
});
