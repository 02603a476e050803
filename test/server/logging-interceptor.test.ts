import { Code, ConnectError } from '@connectrpc/connect';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { registerRunService } from '../../src/server/routes/run-service.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { startTestServer, type TestServer } from './test-server.js';

const SECRET = 'postgres://admin:hunter2@db.internal';

describe('loggingInterceptor', () => {
  let t: TestServer;
  let client: grpc.Client;

  beforeAll(async () => {
    t = await startTestServer({
      routes: (router) =>
        registerRunService(router, {
          getRun: () => {
            throw new Error(`cannot connect to ${SECRET}`);
          },
          cancelRun: () => {
            throw new ConnectError('run r1 was not found in this namespace', Code.NotFound);
          },
          async *streamRunEvents() {
            yield { event: { runId: 'r1', seq: 0n } };
            throw new Error(`lost ${SECRET} mid-stream`);
          },
          listWorkflows: () => ({ workflows: [] }),
        }),
    });
    client = grpcJsClient(t.server.address);
  });
  afterAll(async () => {
    client.close();
    await t.server.close(1000);
  });

  const linesFor = (rpc: string) => t.logs.filter((l) => l.rpc === `/waymark.v1.RunService/${rpc}`);

  it('turns an unexpected error into INTERNAL without its message, and logs it at error level', async () => {
    const err = (await unaryCall(client, RunService.method.getRun, { runId: 'r1' }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(err.details).not.toContain('hunter2');
    const [line, ...more] = linesFor('GetRun');
    expect(more).toHaveLength(0);
    expect(line).toMatchObject({ level: 50, code: 'INTERNAL', msg: 'rpc failed' });
    expect(JSON.stringify(line)).toContain('hunter2');
  });

  it('passes a deliberate error through unchanged and logs it at info level', async () => {
    const err = (await unaryCall(client, RunService.method.cancelRun, { runId: 'r1' }).catch((e: unknown) => e)) as grpc.ServiceError;
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(decodeURIComponent(err.details)).toBe('run r1 was not found in this namespace');
    expect(linesFor('CancelRun')).toEqual([expect.objectContaining({ level: 30, code: 'NOT_FOUND' })]);
  });

  it('sees an error thrown mid-stream, after messages were sent', async () => {
    const stream = serverStreamCall(client, RunService.method.streamRunEvents, { runId: 'r1' });
    expect((await stream.next()).event?.runId).toBe('r1');
    const status = await stream.status;
    expect(status.code).toBe(grpc.status.INTERNAL);
    expect(status.details).not.toContain('hunter2');
    expect(linesFor('StreamRunEvents')).toEqual([expect.objectContaining({ level: 50, code: 'INTERNAL' })]);
  });

  it('logs nothing for a successful call', async () => {
    await unaryCall(client, RunService.method.listWorkflows, {});
    expect(linesFor('ListWorkflows')).toHaveLength(0);
  });
});
