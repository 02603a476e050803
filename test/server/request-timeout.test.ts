import { fromBinary } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { MAX_DEADLINE_MS } from '../../src/server/transport/request-timeout.js';
import { registerRunService } from '../../src/server/routes/run-service.js';
import { grpcFrame, rawRequest } from './raw-http2.js';
import { startTestServer } from './test-server.js';

/*
 * Issue 16, finding 7: a `grpc-timeout` over 2^31-1 ms overflowed Node's timer (a
 * TimeoutOverflowWarning on stderr, the call failing after 1 ms with DEADLINE_EXCEEDED). It is a
 * valid header, so it is clamped to 24.8 days, and the call runs.
 */

describe('deadlines longer than a timer can hold', () => {
  it('are clamped for gRPC and Connect: the call runs, with the longest deadline, and no TimeoutOverflowWarning', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => {
      warnings.push(w);
    };
    process.on('warning', onWarning);
    // The handler answers with the deadline it was given, in ms, as the run id.
    const t = await startTestServer({
      routes: (router) => registerRunService(router, { getRun: async (_req, ctx) => {
        // Longer than the 1 ms an overflowed deadline gave; a deadline aborts the signal.
        await new Promise((resolve, reject) => {
          const timer = setTimeout(resolve, 20);
          ctx.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            reject(ConnectError.from(ctx.signal.reason));
          });
        });
        return { run: { id: String(ctx.timeoutMs()) } };
      } }),
    });
    try {
      const grpc = await rawRequest(t.server.url, {
        ':path': '/waymark.v1.RunService/GetRun', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '99999999H',
      }, grpcFrame(RunService.method.getRun.input, { runId: 'x' }));
      expect(grpc.trailers['grpc-status']).toBe('0');
      const grpcDeadline = Number(fromBinary(RunService.method.getRun.output, grpc.body.subarray(5)).run?.id);
      expect(grpcDeadline).toBeGreaterThan(MAX_DEADLINE_MS - 60_000);
      expect(grpcDeadline).toBeLessThanOrEqual(MAX_DEADLINE_MS);

      const connect = await rawRequest(t.server.url, {
        ':path': '/waymark.v1.RunService/GetRun', 'content-type': 'application/json', 'connect-protocol-version': '1', 'connect-timeout-ms': '9999999999',
      }, Buffer.from(JSON.stringify({ runId: 'x' })));
      expect(connect.headers[':status']).toBe(200);
      const connectDeadline = Number((JSON.parse(connect.body.toString()) as { run: { id: string } }).run.id);
      expect(connectDeadline).toBeGreaterThan(MAX_DEADLINE_MS - 60_000);
      expect(connectDeadline).toBeLessThanOrEqual(MAX_DEADLINE_MS);
      expect(warnings.filter((w) => w.name === 'TimeoutOverflowWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
      await t.server.close(1_000);
    }
  });

  it('a malformed grpc-timeout is still refused with INVALID_ARGUMENT', async () => {
    const t = await startTestServer({ routes: (router) => registerRunService(router, { getRun: () => ({}) }) });
    try {
      const res = await rawRequest(t.server.url, {
        ':path': '/waymark.v1.RunService/GetRun', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '123456789H',
      }, grpcFrame(RunService.method.getRun.input, { runId: 'x' }));
      expect(res.trailers['grpc-status'] ?? res.headers['grpc-status']).toBe('3');
    } finally {
      await t.server.close(1_000);
    }
  });
});
