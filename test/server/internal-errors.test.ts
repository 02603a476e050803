import { ConnectError } from '@connectrpc/connect';
import { errorFromJson } from '@connectrpc/connect/protocol-connect';
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import type { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { connectJson, startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { grpcShape } from './grpc-status.js';

/*
 * Issue 16, "every INTERNAL logged with its cause and never its payload": real INTERNALs, provoked
 * by faults injected at the store boundary of the API on a real HTTP/2 port and PostgreSQL. Each
 * is one error line naming the RPC and the run, with the cause chain (class, message, stack,
 * code), and no line holds the request's payload or the values a driver error quotes; the client
 * gets INTERNAL with reason INTERNAL and no internal detail.
 */

const MARKER = 'payload-marker-7f3a9c';
let api: ApiServer;
let client: grpc.Client;
let parked: string;
const restore: (() => void)[] = [];

beforeAll(async () => {
  api = await startApiServer({ prefix: 'waymark_internal' });
  client = grpcJsClient(api.address);
  parked = (await api.engine.runStart({ namespace: 'default', workflowName: 'wait-signal', input: {}, execute: true })).run.id;
}, 60_000);

afterEach(() => {
  for (const undo of restore.splice(0)) undo();
  api.logs.length = 0;
});

afterAll(async () => {
  client?.close();
  await api?.close();
});

/** Replaces one store method for the test; undone after it. */
function inject<K extends keyof PostgresStore>(method: K, impl: PostgresStore[K]): void {
  const original = api.store[method];
  api.store[method] = impl;
  restore.push(() => (api.store[method] = original));
}

const errorLines = () => api.logs.filter((l) => l.level >= 50);

/** No log line of the test holds the marker the request carried. */
function expectNoPayloadLogged(): void {
  for (const line of api.logs) expect(JSON.stringify(line)).not.toContain(MARKER);
}

describe('an INTERNAL is logged once, with its cause, never with its payload', () => {
  it('a store that throws an unexpected error under SendSignal', async () => {
    inject('signalDeliver', () => Promise.reject(new Error('the signal store broke', { cause: new RangeError('an invariant of the inbox failed') })));
    const err = await unaryCall(client, SignalService.method.sendSignal, { runId: parked, name: 'go', payload: json({ n: 1, secret: MARKER }), signalId: 'sig-1' })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(err)).toMatchObject({ code: grpc.status.INTERNAL, reason: 'INTERNAL' });
    expect(decodeURIComponent(err.details)).toBe('internal error; the server logged the details');

    const [line, ...more] = errorLines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({
      msg: 'rpc failed', rpc: '/waymark.v1.SignalService/SendSignal', code: 'INTERNAL', run_id: parked,
      fault: { type: 'Error', message: 'the signal store broke', causes: [{ type: 'RangeError', message: 'an invariant of the inbox failed' }] },
    });
    const fault = line!.fault as { stack: string; causes: { stack: string }[] };
    expect(fault.stack).toMatch(/^Error: the signal store broke\n\s+at /);
    expect(fault.causes[0]!.stack).toMatch(/^RangeError: an invariant of the inbox failed\n\s+at /);
    expectNoPayloadLogged();
  });

  it('a driver error quoting the stored value: its code is logged, its detail is not', async () => {
    // What PostgreSQL answers for a value it cannot take: `detail` and `where` quote the value.
    const pgError = Object.assign(new Error('invalid input syntax for type json'), {
      code: '22P02', severity: 'ERROR', detail: `Token "${MARKER}" is invalid.`, where: `JSON data, line 1: {"secret":"${MARKER}`,
    });
    inject('runCreate', () => Promise.reject(pgError));
    const err = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({ value: MARKER }), labels: { team: 'a' } })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(err)).toMatchObject({ code: grpc.status.INTERNAL, reason: 'INTERNAL' });
    expect(err.details).not.toContain('json');
    const [line, ...more] = errorLines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({ rpc: '/waymark.v1.RunService/StartRun', workflow: 'echo-flow', fault: { type: 'Error', message: 'invalid input syntax for type json', code: '22P02' } });
    expectNoPayloadLogged();
  });

  it('a fault while a server stream follows the run: logged with its run id', async () => {
    inject('journalList', () => Promise.reject(new TypeError('cannot read properties of undefined (reading "seq")')));
    const stream = serverStreamCall(client, RunService.method.streamRunEvents, { runId: parked });
    const status = await stream.status;
    expect(grpcShape(status)).toMatchObject({ code: grpc.status.INTERNAL, reason: 'INTERNAL' });
    expect(decodeURIComponent(status.details)).toBe('internal error; the server logged the details');
    const [line, ...more] = errorLines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({ rpc: '/waymark.v1.RunService/StreamRunEvents', run_id: parked, fault: { type: 'TypeError' } });
  });

  it('a fault Connect meets after the handler (encoding the answer) is logged too, and its text stays in the log', async () => {
    // A corrupted row: an output no JSON can hold. The handler returns; Connect cannot encode it as JSON.
    const done = (await api.engine.runStart({ namespace: 'default', workflowName: 'echo-flow', input: { value: 1 }, execute: true })).run;
    expect(done.status).toBe('SUCCEEDED');
    const runGet = api.store.runGet.bind(api.store);
    inject('runGet', async (params) => ({ ...(await runGet(params)), output: { ratio: Number.NaN } }));
    const res = await connectJson(api.address, RunService.method.getRun, JSON.stringify({ runId: done.id }));
    expect(res.status).toBe(500);
    const err = errorFromJson(res.json as never, undefined, new ConnectError('not an error'));
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: 'INTERNAL', domain: 'waymark' });
    expect(err.rawMessage).toBe('internal error; the server logged the details');
    const [line, ...more] = errorLines();
    expect(more).toEqual([]);
    expect(line).toMatchObject({ rpc: '/waymark.v1.RunService/GetRun', run_id: done.id, code: 'INTERNAL' });
    expect(JSON.stringify(line!.fault)).toMatch(/NaN or Infinity/);
  });
});
