import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { create, fromBinary, toBinary, toJson, type DescMessage } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GetJournalResponseSchema, GetRunResponseSchema, ListRunsResponseSchema, RunService, StartRunRequestSchema, StreamRunEventsResponseSchema,
} from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { MAX_JSON_DEPTH } from '../../src/journal/limits.js';
import { connectJson, grpcFrame, grpcRaw, startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';
import { grpcJsClient, unaryCall } from './grpc-js-client.js';
import { grpcShape } from './grpc-status.js';

/*
 * Issue 16, finding 5: one nesting limit, in JSON levels, that both protocols enforce and every
 * client can decode. A value at the limit is accepted over binary and JSON and read back, inside
 * the envelopes the journal wraps it in, by protobuf-es (the TypeScript client's runtime) and by
 * Python's upb (the Python client's), both of which stop at 100 nested messages; protobuf-go's
 * limit is 10,000. One level more is INVALID_ARGUMENT naming where, over both protocols.
 */

let api: ApiServer;
let client: grpc.Client;
const python = path.resolve('.venv/bin/python');
const hasPython = existsSync(python);

beforeAll(async () => {
  api = await startApiServer({ prefix: 'waymark_depth' });
  client = grpcJsClient(api.address);
}, 60_000);

afterAll(async () => {
  client?.close();
  await api?.close();
});

/** `levels` nested lists around 1: nest(2) is [[1]]. */
function nest(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}

/** The gRPC messages of a raw response body (uncompressed frames). */
function frames(body: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at + 5 <= body.length;) {
    const length = body.readUInt32BE(at + 1);
    out.push(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return out;
}

/** Calls `method` over raw gRPC and returns its response messages as bytes (the test fails on an error status). */
async function rawCall(method: { parent: { typeName: string }; name: string; input: DescMessage }, request: Record<string, unknown>): Promise<Buffer[]> {
  const res = await grpcRaw(api.address, method, grpcFrame(toBinary(method.input, create(method.input, request as never))));
  expect(res.grpcMessage).toBe('');
  expect(res.grpcStatus).toBe(0);
  return frames(res.body);
}

/** Decodes each message with Python's protobuf runtime (upb), as the Python client does; returns its errors. */
function pythonDecode(messages: { type: string; bytes: Buffer }[]): string[] {
  const dir = mkdtempSync(path.join(tmpdir(), 'waymark-depth-'));
  try {
    const files = messages.map((m, i) => {
      const file = path.join(dir, `${i}.bin`);
      writeFileSync(file, m.bytes);
      return [m.type, file];
    });
    const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(path.resolve('clients/python/gen'))})
from waymark.v1 import run_service_pb2 as rs
errors = []
for name, file in json.loads(sys.argv[1]):
    try:
        getattr(rs, name).FromString(open(file, 'rb').read())
    except Exception as e:
        errors.append(f'{name}: {e}')
print(json.dumps(errors))
`;
    const run = spawnSync(python, ['-c', script, JSON.stringify(files)], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    return JSON.parse(run.stdout) as string[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe(`finding 5: one nesting limit of ${MAX_JSON_DEPTH} JSON levels`, () => {
  it('a value at the limit is stored and read back by binary clients through GetRun, GetJournal, the stream and ListRuns', { timeout: 60_000 }, async () => {
    // The input object is a level: {value: 31 lists} is 32 levels; the output is the 31 lists.
    const input = json({ value: nest(MAX_JSON_DEPTH - 1) } as never);
    const started = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input, wait: true }, 30_000);
    expect(toJson(ValueSchema, started.run!.output!)).toEqual(nest(MAX_JSON_DEPTH - 1));
    // A signal payload at the limit, journaled inside its resolution's envelope ({source, value}).
    const parked = await unaryCall(client, RunService.method.startRun, { workflow: 'wait-signal', input: json({}), wait: true }, 30_000);
    const sent = await unaryCall(client, SignalService.method.sendSignal, { runId: parked.run!.id, name: 'go', payload: json({ n: 2, deep: nest(MAX_JSON_DEPTH - 1) } as never) });
    expect(sent.applied).toBe(true);

    const read: { type: string; bytes: Buffer }[] = [];
    for (const runId of [started.run!.id, parked.run!.id]) {
      read.push(...(await rawCall(RunService.method.getRun, { runId })).map((bytes) => ({ type: 'GetRunResponse', bytes })));
      read.push(...(await rawCall(RunService.method.getJournal, { runId })).map((bytes) => ({ type: 'GetJournalResponse', bytes })));
      read.push(...(await rawCall(RunService.method.streamRunEvents, { runId })).map((bytes) => ({ type: 'StreamRunEventsResponse', bytes })));
    }
    read.push(...(await rawCall(RunService.method.listRuns, {})).map((bytes) => ({ type: 'ListRunsResponse', bytes })));
    expect(read.filter((m) => m.type === 'StreamRunEventsResponse').length).toBeGreaterThan(2);

    // protobuf-es, with its default recursion limit (100), as the TypeScript client decodes.
    const schemas = { GetRunResponse: GetRunResponseSchema, GetJournalResponse: GetJournalResponseSchema, StreamRunEventsResponse: StreamRunEventsResponseSchema, ListRunsResponse: ListRunsResponseSchema };
    for (const m of read) expect(() => fromBinary(schemas[m.type as keyof typeof schemas] as DescMessage, m.bytes)).not.toThrow();
    if (hasPython) expect(pythonDecode(read)).toEqual([]);
    else console.warn('json-depth: .venv/bin/python missing (scripts/setup-test-tools.sh); Python decoding not checked');
  });

  it('one level more is INVALID_ARGUMENT naming where, over binary and over Connect JSON, and writes nothing', async () => {
    const before = await api.rowCounts();
    const deep = { value: nest(MAX_JSON_DEPTH) };
    const binary = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json(deep as never) })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    const where = `input.value${'[0]'.repeat(MAX_JSON_DEPTH - 1)}`;
    expect(grpcShape(binary)).toEqual({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: [where] });
    const viaJson = await connectJson(api.address, RunService.method.startRun, JSON.stringify({ workflow: 'echo-flow', input: deep }));
    expect(viaJson.json.code).toBe('invalid_argument');
    expect(JSON.stringify(viaJson.json)).not.toContain('recursion');
    expect(String(viaJson.json.message)).toContain(where);
    expect(await api.rowCounts()).toEqual(before);
    // The requests the issue saw fail to decode (49 lists and more) are INVALID_ARGUMENT too.
    const res = await grpcRaw(api.address, RunService.method.startRun, grpcFrame(toBinary(StartRunRequestSchema, create(StartRunRequestSchema, { workflow: 'echo-flow', input: json(nest(49) as never) }))));
    expect(res.grpcStatus).toBe(grpc.status.INVALID_ARGUMENT);
  });
});
