import { create, toBinary } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { errorFromJson } from '@connectrpc/connect/protocol-connect';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BadRequestSchema, ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import type { DriftRecovery} from '../../src/gen/waymark/v1/run_service_pb.js';
import { ListRunsRequestSchema, ResumeRunRequestSchema, RunService, StartRunRequestSchema } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { connectJson, grpcFrame, grpcRaw, startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';
import { grpcJsClient, unaryCall } from './grpc-js-client.js';
import { grpcShape } from './grpc-status.js';

/*
 * Issue 16, findings 3, 4 (JSON PostgreSQL cannot store, malformed protobuf), 6 and 7: what a
 * hostile or broken client sends, against the API on a real server and a real PostgreSQL. Every
 * refusal is INVALID_ARGUMENT or RESOURCE_EXHAUSTED with an ErrorInfo naming the request field,
 * and the row counts of every table the API writes prove nothing was written.
 */

const LIMIT = 4096;
let api: ApiServer;
let client: grpc.Client;

beforeAll(async () => {
  api = await startApiServer({ limits: { payloadBytes: LIMIT }, prefix: 'waymark_hostile' });
  client = grpcJsClient(api.address);
}, 60_000);

afterAll(async () => {
  client?.close();
  await api?.close();
});

/** The code, ErrorInfo reason and BadRequest fields of a Connect JSON error answer. */
function jsonShape(body: Record<string, unknown>): { code: string; reason: string | undefined; fields: string[] } {
  const err = errorFromJson(body as never, undefined, new ConnectError('not an error body'));
  return {
    code: String(body.code),
    reason: err.findDetails(ErrorInfoSchema)[0]?.reason,
    fields: err.findDetails(BadRequestSchema)[0]?.fieldViolations.map((v) => v.field) ?? [],
  };
}

/** A payload whose JSON text is `bytes` long: {"n":1,"pad":"xxx…"}. */
function sized(bytes: number): { n: number; pad: string } {
  return { n: 1, pad: 'x'.repeat(bytes - JSON.stringify({ n: 1, pad: '' }).length) };
}

describe('finding 3: limits are checked on what is stored, against the request field', () => {
  it('a signal that would be buffered at the payload limit is refused at SendSignal, naming payload, and writes nothing', async () => {
    // Not executed yet (no wait, no executor): its `go` wait is not open, so a signal is buffered.
    const started = await unaryCall(client, RunService.method.startRun, { workflow: 'wait-signal', input: json({}) });
    const runId = started.run!.id;
    const before = await api.rowCounts();
    const err = await unaryCall(client, SignalService.method.sendSignal, { runId, name: 'go', payload: json(sized(LIMIT)), signalId: 's-1' })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(err)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, reason: 'PAYLOAD_TOO_LARGE', fields: ['payload'] });
    expect(await api.rowCounts()).toEqual(before);

    // What is accepted fits as the resolution a wait makes of it: the run takes it and succeeds.
    const fits = sized(LIMIT - 100);
    const buffered = await unaryCall(client, SignalService.method.sendSignal, { runId, name: 'go', payload: json(fits), signalId: 's-2' });
    expect(buffered.buffered).toBe(true);
    const [result] = await api.engine.runExecutePending({ maxRuns: 1 });
    expect(result?.outcome).toBe('succeeded');
    expect(result?.run?.output).toBe(2);
  });

  it('a signal to an open wait and a decision over the limit name payload, not the journal entry', async () => {
    const parked = await unaryCall(client, RunService.method.startRun, { workflow: 'wait-signal', input: json({}), wait: true }, 30_000);
    const before = await api.rowCounts();
    const signal = await unaryCall(client, SignalService.method.sendSignal, { runId: parked.run!.id, name: 'go', payload: json(sized(LIMIT - 20)) })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(signal)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, reason: 'PAYLOAD_TOO_LARGE', fields: ['payload'] });

    const approval = await unaryCall(client, RunService.method.startRun, { workflow: 'refund', input: json({ order: 'o-1', amount: 3 }), wait: true }, 30_000);
    const mid = await api.rowCounts();
    const decision = await unaryCall(client, SignalService.method.decideApproval, {
      id: approval.waitingOn[0]!.approvalId, approve: true, by: 'ann', payload: json({ pad: 'x'.repeat(LIMIT - 20) }),
    }).then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(decision)).toEqual({ code: grpc.status.RESOURCE_EXHAUSTED, reason: 'PAYLOAD_TOO_LARGE', fields: ['payload'] });
    expect(await api.rowCounts()).toEqual(mid);
    expect(mid.journal!).toBeGreaterThan(before.journal!);
  });
});

describe('finding 4: JSON PostgreSQL cannot store, and malformed protobuf', () => {
  it('a lone surrogate in a payload over Connect JSON is INVALID_ARGUMENT naming where, and writes nothing', async () => {
    const before = await api.rowCounts();
    const res = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","input":{"value":{"note":"a\\ud800b"}}}');
    expect(jsonShape(res.json)).toEqual({ code: 'invalid_argument', reason: 'UNPAIRED_SURROGATE', fields: ['input.value.note'] });
    const key = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","input":{"value":{"\\udfff":1}}}');
    expect(jsonShape(key.json)).toMatchObject({ code: 'invalid_argument', reason: 'UNPAIRED_SURROGATE' });
    const label = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","labels":{"team":"\\ud83d"}}');
    expect(jsonShape(label.json)).toEqual({ code: 'invalid_argument', reason: 'UNPAIRED_SURROGATE', fields: ['labels[team]'] });
    expect(await api.rowCounts()).toEqual(before);
    // A surrogate pair is ordinary text and round-trips.
    const ok = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","input":{"value":"\\ud83d\\ude00"},"wait":true}');
    expect(ok.status).toBe(200);
    expect((ok.json.run as { output: unknown }).output).toBe('😀');
  });

  it('binary bodies that do not decode are INVALID_ARGUMENT with an ErrorInfo, not INTERNAL', async () => {
    const before = await api.rowCounts();
    const badUtf8 = Buffer.from([0x12, 0x02, 0xff, 0xfe]); // field 2 (workflow), a string that is not UTF-8
    const badVarint = Buffer.from([0x08, ...new Array<number>(10).fill(0xff), 0x01]);
    const deep = toBinary(StartRunRequestSchema, create(StartRunRequestSchema, { workflow: 'echo-flow', input: json(nest(60) as never) }));
    for (const body of [badUtf8, badVarint, deep]) {
      const res = await grpcRaw(api.address, RunService.method.startRun, grpcFrame(body));
      expect(res.grpcStatus).toBe(grpc.status.INVALID_ARGUMENT);
      const err = findTrailerError(new Headers(Object.entries(res.trailers).filter(([k]) => !k.startsWith(':')) as [string, string][]));
      expect(err?.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: 'MALFORMED_REQUEST', domain: 'waymark' });
    }
    expect(await api.rowCounts()).toEqual(before);
    expect(api.logs.filter((l) => l.level >= 50)).toEqual([]);
  });
});

describe('finding 6: unknown enum values are refused', () => {
  it('an unknown status name over Connect JSON: INVALID_ARGUMENT naming statuses (it listed every run)', async () => {
    const res = await connectJson(api.address, RunService.method.listRuns, '{"statuses":["RUN_STATUS_NOPE"]}');
    expect(jsonShape(res.json)).toEqual({ code: 'invalid_argument', reason: 'MALFORMED_REQUEST', fields: ['statuses'] });
    const states = await connectJson(api.address, SignalService.method.listApprovals, '{"states":["APPROVAL_STATE_NOPE"]}');
    expect(jsonShape(states.json)).toEqual({ code: 'invalid_argument', reason: 'MALFORMED_REQUEST', fields: ['states'] });
  });

  it('an unknown drift_recovery name or number does not resume the run, and writes nothing', async () => {
    const parked = await unaryCall(client, RunService.method.startRun, { workflow: 'wait-signal', input: json({}), wait: true }, 30_000);
    const before = await api.rowCounts();
    const res = await connectJson(api.address, RunService.method.resumeRun, JSON.stringify({ runId: parked.run!.id, driftRecovery: 'DRIFT_RECOVERY_NOPE' }));
    expect(jsonShape(res.json)).toEqual({ code: 'invalid_argument', reason: 'MALFORMED_REQUEST', fields: ['drift_recovery'] });
    const binary = await grpcRaw(api.address, RunService.method.resumeRun, grpcFrame(toBinary(ResumeRunRequestSchema, create(ResumeRunRequestSchema, { runId: parked.run!.id, driftRecovery: 7 as DriftRecovery }))));
    expect(binary.grpcStatus).toBe(grpc.status.INVALID_ARGUMENT);
    const statuses = await grpcRaw(api.address, RunService.method.listRuns, grpcFrame(toBinary(ListRunsRequestSchema, create(ListRunsRequestSchema, { statuses: [RunStatus.SUSPENDED, 42 as RunStatus] }))));
    expect(statuses.grpcStatus).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await api.rowCounts()).toEqual(before);
  });
});

describe('finding 7: keys, lengths and NUL in labels', () => {
  it('a __proto__ key is refused naming where, instead of vanishing from the stored value', async () => {
    const before = await api.rowCounts();
    const res = await connectJson(api.address, RunService.method.startRun, '{"workflow":"echo-flow","input":{"value":{"__proto__":{"admin":true},"a":1}}}');
    expect(jsonShape(res.json)).toEqual({ code: 'invalid_argument', reason: 'INVALID_REQUEST', fields: ['input.value.__proto__'] });
    expect(await api.rowCounts()).toEqual(before);
  });

  it('lengths count characters (code points), not UTF-16 units', async () => {
    const ok = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({}), labels: { mood: '😀'.repeat(256) }, idempotencyKey: '😀'.repeat(256) });
    expect(ok.run!.labels.mood).toBe('😀'.repeat(256));
    const err = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({}), labels: { mood: '😀'.repeat(257) } })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(err)).toEqual({ code: grpc.status.INVALID_ARGUMENT, reason: 'INVALID_REQUEST', fields: ['labels[mood]'] });
  });

  it('a NUL in a label answers NUL_CHARACTER, as the error table says', async () => {
    const before = await api.rowCounts();
    const err = await unaryCall(client, RunService.method.startRun, { workflow: 'echo-flow', input: json({}), labels: { team: 'a\u0000b' } })
      .then(() => expect.fail('accepted'), (e: grpc.ServiceError) => e);
    expect(grpcShape(err)).toEqual({ code: grpc.status.INVALID_ARGUMENT, reason: 'NUL_CHARACTER', fields: ['labels[team]'] });
    expect(await api.rowCounts()).toEqual(before);
  });
});

describe('what an error echoes of the request is bounded (found by the full fuzz run)', () => {
  it('64 labels with 3,000-character keys: an INVALID_ARGUMENT status within bounds, not a reset stream', async () => {
    // Each key was named in the message and in a field violation: trailers over Node's 64 KiB
    // header block limit, so the stream was reset (FRAME_SIZE_ERROR) and the client got no status.
    const labels = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`${i}-${'é'.repeat(3_000)}`, 'v']));
    for (const method of [RunService.method.listRuns, SignalService.method.listApprovals]) {
      const res = await grpcRaw(api.address, method, grpcFrame(toBinary(method.input, create(method.input, { labels } as never))));
      expect(res.grpcStatus).toBe(grpc.status.INVALID_ARGUMENT);
      const err = findTrailerError(new Headers(Object.entries(res.trailers).filter(([k]) => !k.startsWith(':')) as [string, string][]))!;
      expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe('INVALID_REQUEST');
      const violations = err.findDetails(BadRequestSchema)[0]!.fieldViolations;
      expect(violations).toHaveLength(17); // 16 named, then how many more
      expect(violations[16]!.description).toBe('and 48 more violations');
      expect(violations[0]!.field).toMatch(/^labels\[0-é+… \(\d+ more characters\)$/);
      expect(Array.from(err.rawMessage).length).toBeLessThan(1_100);
    }
  });
});

/** A JSON value `levels` containers deep: [[…[1]…]]. */
export function nest(levels: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
}
