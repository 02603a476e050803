import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';
import { grpcJsClient, unaryCall } from './grpc-js-client.js';
import { grpcShape } from './grpc-status.js';

/*
 * Issue 16, finding 4: page tokens edited by hand reached PostgreSQL with out-of-range integers
 * and timestamps and failed there as INTERNAL. Tokens are validated and bounded (not signed, so
 * they stay valid across replicas and restarts): an edited token, keeping the filter hash so it
 * gets as far as the store's cursor, is INVALID_ARGUMENT on page_token, and nothing reaches SQL.
 */

let api: ApiServer;
let client: grpc.Client;

beforeAll(async () => {
  api = await startApiServer({ prefix: 'waymark_tokens' });
  client = grpcJsClient(api.address);
}, 60_000);

afterAll(async () => {
  client?.close();
  await api?.close();
});

type Body = { v: number; l: string; f: string; c: string };
const decode = (token: string): Body => JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Body;
const encode = (body: Body): string => Buffer.from(JSON.stringify(body), 'utf8').toString('base64url');
const cursorOf = (body: Body): unknown => JSON.parse(Buffer.from(body.c, 'base64url').toString('utf8'));
const withCursor = (body: Body, cursor: unknown): string => encode({ ...body, c: Buffer.from(JSON.stringify(cursor), 'utf8').toString('base64url') });

async function refused(call: Promise<unknown>): Promise<void> {
  const err = await call.then(() => expect.fail('the edited token was accepted'), (e: grpc.ServiceError) => e);
  expect(grpcShape(err)).toEqual({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['page_token'] });
}

describe('finding 4: edited page tokens never reach PostgreSQL', () => {
  it('ListRuns: out-of-range and malformed times in the cursor', async () => {
    for (let i = 0; i < 3; i++) await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({}) });
    const first = await unaryCall(client, RunService.method.listRuns, { pageSize: 1 });
    const body = decode(first.nextPageToken);
    const [, id] = cursorOf(body) as [string, string];
    for (const at of ['+275760-09-13T00:00:00.000Z', '-271821-04-20T00:00:00.000Z', '0001-01-01T00:00:00.000Z', '10000-01-01T00:00:00Z']) {
      await refused(unaryCall(client, RunService.method.listRuns, { pageSize: 1, pageToken: withCursor(body, [at, id]) }));
    }
    // The token as issued still pages on.
    const second = await unaryCall(client, RunService.method.listRuns, { pageSize: 1, pageToken: first.nextPageToken });
    expect(second.runs[0]!.id).not.toBe(first.runs[0]!.id);
  });

  it('GetJournal: a seq past int4', async () => {
    const { run } = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({}), wait: true }, 30_000);
    const first = await unaryCall(client, RunService.method.getJournal, { runId: run!.id, pageSize: 1 });
    const body = decode(first.nextPageToken);
    for (const seq of ['9999999999', '2147483648']) await refused(unaryCall(client, RunService.method.getJournal, { runId: run!.id, pageSize: 1, pageToken: encode({ ...body, c: seq }) }));
    expect((await unaryCall(client, RunService.method.getJournal, { runId: run!.id, pageSize: 1, pageToken: first.nextPageToken })).entries[0]!.seq).toBe(1n);
  });

  it('ListApprovals: a time past PostgreSQL timestamps and a seq past int4', async () => {
    for (let i = 0; i < 2; i++) await unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: `o-${i}`, amount: 1 }), wait: true }, 30_000);
    const first = await unaryCall(client, SignalService.method.listApprovals, { pageSize: 1 });
    const body = decode(first.nextPageToken);
    const [micros, runId, seq] = cursorOf(body) as [string, string, number];
    for (const cursor of [['99999999999999999999', runId, seq], ['253402300800000000', runId, seq], [micros, runId, 2 ** 31], [micros, runId, Number.MAX_SAFE_INTEGER]]) {
      await refused(unaryCall(client, SignalService.method.listApprovals, { pageSize: 1, pageToken: withCursor(body, cursor) }));
    }
    expect((await unaryCall(client, SignalService.method.listApprovals, { pageSize: 1, pageToken: first.nextPageToken })).approvals).toHaveLength(1);
    expect(api.logs.filter((l) => l.level >= 50)).toEqual([]);
  });
});
