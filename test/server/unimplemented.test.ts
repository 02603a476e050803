import { create, type DescMethod, type DescMethodServerStreaming, type DescMethodUnary, type DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { AdminService } from '../../src/gen/waymark/v1/admin_service_pb.js';
import { grpcJsClient, grpcPath, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { startTestServer, type TestServer } from './test-server.js';

const rpcs: [string, DescService, DescMethod][] = [RunService, SignalService, AdminService].flatMap((service) =>
  service.methods.map((method): [string, DescService, DescMethod] => [grpcPath(method), service, method]),
);

describe('RunService, SignalService and AdminService before the API is wired', () => {
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

  it('covers every RPC of the three services', () => {
    expect(rpcs).toHaveLength(20);
  });

  it.each(rpcs)('%s answers UNIMPLEMENTED over gRPC (grpc-js)', async (path, _service, method) => {
    let failure: { code: number; details: string };
    if (method.methodKind === 'unary') {
      failure = await unaryCall(client, method as DescMethodUnary, {}).then(
        () => expect.fail(`${path} succeeded`),
        (err: grpc.ServiceError) => err,
      );
    } else if (method.methodKind === 'server_streaming') {
      failure = await serverStreamCall(client, method as DescMethodServerStreaming, {}).status;
    } else {
      throw new Error(`unexpected ${method.methodKind} method ${path}`);
    }
    expect(failure.code).toBe(grpc.status.UNIMPLEMENTED);
    // grpc-js unescapes grpc-message with decodeURI, which leaves reserved characters such as
    // "/" and ";" percent-encoded; other gRPC clients decode them fully.
    const details = decodeURIComponent(failure.details);
    expect(details).toContain(path);
    expect(details).toContain('later Waymark release');
  });

  it.each(rpcs)('%s answers UNIMPLEMENTED over the Connect protocol', async (path, service, method) => {
    const transport = createConnectTransport({ baseUrl: t.server.url, httpVersion: '2' });
    const connect = createClient(service, transport) as unknown as Record<string, (req: object) => unknown>;
    const call = connect[method.localName]!;
    const request = create(method.input);
    const failure = await (async () => {
      try {
        const result = call(request);
        if (method.methodKind === 'server_streaming') {
          for await (const _ of result as AsyncIterable<unknown>) {
            // no message is expected before the error
          }
        } else {
          await result;
        }
      } catch (err) {
        return err;
      }
      throw new Error(`${path} succeeded`);
    })();
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.Unimplemented);
    expect((failure as ConnectError).rawMessage).toContain(path);
  });
});
