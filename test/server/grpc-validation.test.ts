import * as grpc from '@grpc/grpc-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ErrorInfoSchema, QuotaFailureSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { json } from './api-harness.js';
import { grpcJsClient, serverStreamCall, unaryCall } from './grpc-js-client.js';
import { grpcDetail, grpcShape } from './grpc-status.js';

/*
 * Malformed and oversized requests against a real server process, over HTTP/2 with grpc-js: each
 * gets the documented code and details (docs/api.md "Errors"), and the database proves nothing was
 * written: the row counts of every table the API writes are unchanged.
 */

const TIMEOUT = 120_000;
const UNKNOWN_RUN = '018f0000-0000-7000-8000-000000000000';

let db: TestDatabase;
let admin: pg.Pool;
let server: WaymarkProcess;
let client: grpc.Client;

beforeAll(async () => {
  db = await createTestDatabase('waymark_validation');
  admin = new pg.Pool({ connectionString: db.url, max: 1 });
  server = WaymarkProcess.start(['server'], {
    // A short grace: the request refused for its size leaves grpc-js's HTTP/2 session open after
    // client.close(), so the drain waits out the whole grace before destroying it (reported).
    env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_WORKFLOWS: 'examples/refund.ts', WAYMARK_SHUTDOWN_GRACE_MS: '2000' },
  });
  client = grpcJsClient(await server.listening());
}, TIMEOUT);

afterAll(async () => {
  client?.close();
  await server?.stop();
  await admin?.end();
  await db?.drop();
}, TIMEOUT);

async function rowCounts(): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ runs: number; journal: number; inbox: number; deadlines: number }>(`SELECT
    (SELECT count(*)::int FROM runs) AS runs, (SELECT count(*)::int FROM journal) AS journal,
    (SELECT count(*)::int FROM signal_inbox) AS inbox, (SELECT count(*)::int FROM suspension_deadlines) AS deadlines`);
  return rows[0]!;
}

function fails(call: Promise<unknown>): Promise<grpc.ServiceError> {
  return call.then(() => expect.fail('the call succeeded'), (err: grpc.ServiceError) => err);
}

describe('malformed and oversized requests over HTTP/2', () => {
  it('get the documented code and details, and write nothing', { timeout: TIMEOUT }, async () => {
    // A parked run and a cancelled one to aim at.
    const parked = await unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'o-1', amount: 5 }), wait: true }, 60_000);
    const cancelled = await unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'o-2', amount: 5 }), wait: true }, 60_000);
    await unaryCall(client, RunService.method.cancelRun, { runId: cancelled.run!.id });
    const before = await rowCounts();
    expect(before.runs).toBe(2);

    const cases: [string, () => Promise<unknown>, { code: number; reason: string | undefined; fields: string[] }][] = [
      ['unknown workflow', () => unaryCall(client, RunService.method.startRun, { workflow: 'nope', input: json({}) }),
        { code: grpc.status.NOT_FOUND, reason: 'WORKFLOW_NOT_FOUND', fields: ['workflow'] }],
      ['input failing the schema', () => unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'o', amount: 'lots' }) }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_INPUT', fields: ['input.amount'] }],
      ['bad ids and labels', () => unaryCall(client, RunService.method.startRun, { namespace: 'A B', workflow: 'refund', labels: { 'a b': 'c' } }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['namespace', 'labels[a b]'] }],
      ['NUL in the input', () => unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'o\u0000', amount: 1 }) }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'NUL_CHARACTER', fields: ['input.order'] }],
      ['malformed run id', () => unaryCall(client, RunService.method.getRun, { runId: 'not-a-run' }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['run_id'] }],
      ['unknown run', () => unaryCall(client, SignalService.method.sendSignal, { runId: UNKNOWN_RUN, name: 'go', payload: json(1) }),
        { code: grpc.status.NOT_FOUND, reason: 'RUN_NOT_FOUND', fields: [] }],
      ['invalid page token', () => unaryCall(client, RunService.method.listRuns, { pageToken: 'bm90IGEgdG9rZW4' }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['page_token'] }],
      ['negative page size', () => unaryCall(client, SignalService.method.listApprovals, { pageSize: -1 }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['page_size'] }],
      ['signal to a finished run (wrong state)', () => unaryCall(client, SignalService.method.sendSignal, { runId: cancelled.run!.id, name: 'go', payload: json(1) }),
        { code: grpc.status.FAILED_PRECONDITION, reason: 'WRONG_STATE', fields: [] }],
      ['decision on a cancelled run (wrong state)', () => unaryCall(client, SignalService.method.decideApproval, {
        id: cancelled.waitingOn[0]!.approvalId, approve: true, by: 'ann',
      }), { code: grpc.status.FAILED_PRECONDITION, reason: 'WRONG_STATE', fields: [] }],
      ['decision failing the approval schema', () => unaryCall(client, SignalService.method.decideApproval, {
        id: parked.waitingOn[0]!.approvalId, approve: true, by: 'ann', payload: json({ comment: ['not', 'text'] }),
      }), { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_RESOLUTION', fields: ['payload.comment'] }],
      ['unknown approval', () => unaryCall(client, SignalService.method.decideApproval, { id: `${parked.run!.id}:0`, approve: true, by: 'ann' }),
        { code: grpc.status.NOT_FOUND, reason: 'APPROVAL_NOT_FOUND', fields: [] }],
      ['bad invalidate target', () => unaryCall(client, RunService.method.resumeRun, { runId: parked.run!.id, invalidate: [999n] }),
        { code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_INVALIDATE_TARGET', fields: ['invalidate'] }],
    ];
    for (const [name, call, expected] of cases) {
      expect({ name, ...grpcShape(await fails(call())) }).toEqual({ name, ...expected });
    }

    // A payload over the 1 MiB limit (the request itself is under the 4 MiB transport limit).
    const big = await fails(unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'x'.repeat(1_200_000), amount: 1 }) }));
    expect(grpcShape(big)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, reason: 'PAYLOAD_TOO_LARGE', fields: ['input'] });
    expect(grpcDetail(big, ErrorInfoSchema)?.metadata).toMatchObject({ limit_bytes: '1048576', limit: 'WAYMARK_MAX_PAYLOAD_BYTES' });
    expect(grpcDetail(big, QuotaFailureSchema)?.violations[0]?.description).toContain('1048576');
    // A request over the transport limit never reaches a handler.
    const huge = await fails(unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'x'.repeat(5_000_000), amount: 1 }) }));
    expect(huge.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // A stream for an unknown run fails before its first message.
    const stream = serverStreamCall(client, RunService.method.streamRunEvents, { runId: UNKNOWN_RUN });
    expect(grpcShape(await stream.status)).toEqual({ code: grpc.status.NOT_FOUND, reason: 'RUN_NOT_FOUND', fields: [] });

    expect(await rowCounts()).toEqual(before);
    // The log has one line per refused call, none of them a server fault.
    expect(server.logs.filter((l) => l.msg === 'rpc failed' && l.level === 'error')).toEqual([]);
  });
});
