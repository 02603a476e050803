import type * as grpc from '@grpc/grpc-js';
import { create, createFileRegistry, fromBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerReflection, type ServerReflectionResponse } from '../../src/gen/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../src/gen/grpc/reflection/v1alpha/reflection_pb.js';
import { bidiCall, grpcJsClient } from './grpc-js-client.js';
import { startTestServer, type TestServer } from './test-server.js';

function descriptorFiles(res: ServerReflectionResponse) {
  expect(res.messageResponse.case).toBe('fileDescriptorResponse');
  const bytes = res.messageResponse.case === 'fileDescriptorResponse' ? res.messageResponse.value.fileDescriptorProto : [];
  return bytes.map((b) => fromBinary(FileDescriptorProtoSchema, b));
}

/**
 * The server answers with the requested file first, as grpc-go and grpc C++ do; a FileDescriptorSet
 * wants imports before importers.
 */
function dependenciesFirst(files: FileDescriptorProto[]): FileDescriptorProto[] {
  const byName = new Map(files.map((f) => [f.name, f]));
  const ordered: FileDescriptorProto[] = [];
  const visit = (file: FileDescriptorProto): void => {
    if (ordered.includes(file)) return;
    for (const name of file.dependency) {
      const dep = byName.get(name);
      if (dep) visit(dep);
    }
    ordered.push(file);
  };
  files.forEach(visit);
  return ordered;
}

describe('grpc.reflection over HTTP/2, called with grpc-js', () => {
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

  it('lists the served services and describes RunService completely in one answer (v1)', async () => {
    const call = bidiCall(client, ServerReflection.method.serverReflectionInfo);
    call.send({ messageRequest: { case: 'listServices', value: '' } });
    const listed = await call.reader.next();
    expect(listed.messageResponse.case).toBe('listServicesResponse');
    const names = listed.messageResponse.case === 'listServicesResponse' ? listed.messageResponse.value.service.map((s) => s.name) : [];
    expect(names).toEqual(expect.arrayContaining(['waymark.v1.RunService', 'waymark.v1.SignalService', 'grpc.health.v1.Health']));
    expect(names).toContain('grpc.reflection.v1.ServerReflection');

    call.send({ messageRequest: { case: 'fileContainingSymbol', value: 'waymark.v1.RunService' } });
    const files = descriptorFiles(await call.reader.next());
    expect(files[0]?.name).toBe('waymark/v1/run_service.proto');
    expect(files.map((f) => f.name)).toEqual(
      expect.arrayContaining(['waymark/v1/run.proto', 'google/protobuf/struct.proto', 'google/protobuf/timestamp.proto']),
    );
    // The answer is self-contained: a registry builds from it alone, which fails on any missing import.
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: dependenciesFirst(files) }));
    const runService = registry.getService('waymark.v1.RunService');
    expect(runService?.methods.map((m) => m.name)).toContain('StreamRunEvents');
    expect(runService?.methods.find((m) => m.name === 'StreamRunEvents')?.methodKind).toBe('server_streaming');

    call.end();
    expect((await call.reader.status).code).toBe(0);
  });

  it('finds files by method, nested and enum-value symbols, and by file name', async () => {
    const call = bidiCall(client, ServerReflection.method.serverReflectionInfo);
    for (const [symbol, file] of [
      ['waymark.v1.SignalService.DecideApproval', 'waymark/v1/signal_service.proto'],
      ['waymark.v1.RunEvent.status_changed', 'waymark/v1/run.proto'],
      ['waymark.v1.RUN_STATUS_SUSPENDED', 'waymark/v1/run.proto'],
      ['google.rpc.ErrorInfo', 'google/rpc/error_details.proto'],
    ] as const) {
      call.send({ messageRequest: { case: 'fileContainingSymbol', value: symbol } });
      expect(descriptorFiles(await call.reader.next())[0]?.name, symbol).toBe(file);
    }
    call.send({ messageRequest: { case: 'fileByFilename', value: 'grpc/health/v1/health.proto' } });
    expect(descriptorFiles(await call.reader.next())[0]?.package).toBe('grpc.health.v1');
    call.end();
  });

  it('answers unknown symbols, files and extension queries with NOT_FOUND error responses, keeping the stream open', async () => {
    const call = bidiCall(client, ServerReflection.method.serverReflectionInfo);
    call.send({ messageRequest: { case: 'fileContainingSymbol', value: 'waymark.v1.Nope' } });
    expect((await call.reader.next()).messageResponse).toMatchObject({ case: 'errorResponse', value: { errorCode: 5 } });
    call.send({ messageRequest: { case: 'fileByFilename', value: 'nope.proto' } });
    expect((await call.reader.next()).messageResponse).toMatchObject({ case: 'errorResponse', value: { errorCode: 5 } });
    call.send({ messageRequest: { case: 'fileContainingExtension', value: { containingType: 'waymark.v1.Run', extensionNumber: 100 } } });
    expect((await call.reader.next()).messageResponse).toMatchObject({ case: 'errorResponse', value: { errorCode: 5 } });
    call.send({ messageRequest: { case: 'allExtensionNumbersOfType', value: 'waymark.v1.Run' } });
    expect((await call.reader.next()).messageResponse).toMatchObject({
      case: 'allExtensionNumbersResponse',
      value: { baseTypeName: 'waymark.v1.Run', extensionNumber: [] },
    });
    call.end();
  });

  it('serves the same answers over v1alpha for older tools', async () => {
    const call = bidiCall(client, v1alpha.ServerReflection.method.serverReflectionInfo);
    call.send({ host: 'h', messageRequest: { case: 'listServices', value: '' } });
    const listed = await call.reader.next();
    expect(listed.validHost).toBe('h');
    expect(listed.originalRequest?.messageRequest.case).toBe('listServices');
    expect(listed.messageResponse.case === 'listServicesResponse' && listed.messageResponse.value.service.map((s) => s.name)).toContain(
      'waymark.v1.RunService',
    );
    call.send({ messageRequest: { case: 'fileContainingSymbol', value: 'waymark.v1.RunService' } });
    const res = await call.reader.next();
    expect(res.messageResponse.case).toBe('fileDescriptorResponse');
    call.end();
  });
});
