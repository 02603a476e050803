import { ConnectError } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { registerRunService } from '../../src/server/routes/run-service.js';
import { grpcJsClient, unaryCall } from './grpc-js-client.js';
import { allServices, startTestServer } from './test-server.js';

/** A promise and its resolver, to hold a handler open until the test says so. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('startGrpcServer', () => {
  it('binds a free port on 127.0.0.1 and reports its address', async () => {
    const t = await startTestServer();
    expect(t.server.port).toBeGreaterThan(0);
    expect(t.server.address).toBe(`127.0.0.1:${t.server.port}`);
    expect(t.server.url).toBe(`http://127.0.0.1:${t.server.port}`);
    await t.server.close(1000);
    await t.server.close(1000); // idempotent
  });

  it('refuses a request over maxRequestBytes with RESOURCE_EXHAUSTED before the handler runs', async () => {
    let called = false;
    const t = await startTestServer({
      maxRequestBytes: 1024,
      routes: (router) =>
        registerRunService(router, {
          getRun: () => {
            called = true;
            return {};
          },
        }),
    });
    const client = grpcJsClient(t.server.address);
    try {
      await expect(unaryCall(client, RunService.method.getRun, { runId: 'x'.repeat(2048) })).rejects.toMatchObject({
        code: grpc.status.RESOURCE_EXHAUSTED,
      });
      expect(called).toBe(false);
      await expect(unaryCall(client, RunService.method.getRun, { runId: 'x' })).resolves.toBeDefined();
    } finally {
      client.close();
      await t.server.close(1000);
    }
  });
});

describe('GrpcServer.close', () => {
  it('lets a call in flight finish within the grace period, and refuses new connections', async () => {
    const entered = gate();
    const release = gate();
    const t = await startTestServer({
      routes: (router, health) => {
        allServices(router, health);
        registerRunService(router, {
          getRun: async (req) => {
            entered.open();
            await release.promise;
            return { run: { id: req.runId } };
          },
        });
      },
    });
    const client = grpcJsClient(t.server.address);
    try {
      const inFlight = unaryCall(client, RunService.method.getRun, { runId: 'run-1' });
      await entered.promise;
      const closed = t.server.close(30_000);
      release.open();
      expect((await inFlight).run?.id).toBe('run-1');
      await closed;
      const late = grpcJsClient(t.server.address);
      await expect(unaryCall(late, RunService.method.getRun, { runId: 'run-2' }, 2_000)).rejects.toMatchObject({
        code: grpc.status.UNAVAILABLE,
      });
      late.close();
    } finally {
      client.close();
    }
  });

  it('aborts handlers still running when the grace period ends, and they end with UNAVAILABLE', async () => {
    const entered = gate();
    const t = await startTestServer({
      routes: (router) =>
        registerRunService(router, {
          getRun: async (_req, ctx) => {
            entered.open();
            // A well-behaved handler: it stops when its signal aborts and reports why.
            await new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => reject(ConnectError.from(ctx.signal.reason))));
            return {};
          },
        }),
    });
    const client = grpcJsClient(t.server.address);
    try {
      const inFlight = unaryCall(client, RunService.method.getRun, { runId: 'run-1' }).catch((err: unknown) => err);
      await entered.promise;
      await t.server.close(50);
      expect(await inFlight).toMatchObject({ code: grpc.status.UNAVAILABLE });
      expect(t.logs.find((l) => l.rpc === '/waymark.v1.RunService/GetRun')).toMatchObject({ code: 'UNAVAILABLE' });
    } finally {
      client.close();
    }
  });

  it('destroys connections whose handlers ignore every signal, so close() always returns', async () => {
    const entered = gate();
    const t = await startTestServer({
      routes: (router) =>
        registerRunService(router, {
          getRun: async () => {
            entered.open();
            await new Promise(() => {});
            return {};
          },
        }),
    });
    const client = grpcJsClient(t.server.address);
    try {
      const inFlight = unaryCall(client, RunService.method.getRun, { runId: 'run-1' }).catch((err: unknown) => err);
      await entered.promise;
      await t.server.close(50);
      const failure = (await inFlight) as grpc.ServiceError;
      expect(failure.code).not.toBe(grpc.status.OK);
      expect(t.logs.some((l) => l.msg.includes('destroying connections'))).toBe(true);
    } finally {
      client.close();
    }
  });
});
