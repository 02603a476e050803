import { readdirSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomUUID } from 'node:crypto';
import { toBinary, toJson, type DescMethod, type DescService } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { SignalService } from '../../src/gen/waymark/v1/signal_service_pb.js';
import { connectJson, grpcFrame, grpcRaw, startApiServer, type ApiServer } from '../support/api-server.js';
import { hostileString, messageArbitrary, type Hints } from '../support/message-arbitrary.js';
import { json } from './api-harness.js';

/*
 * The message-level fuzz suite of issue 16: fast-check over the generated request types (hostile
 * field values, deep Values, unknown enum numbers), as protobuf binary in gRPC frames, as Connect
 * JSON bodies (mutated: unknown keys and enum names, wrong types, lone surrogate escapes, broken
 * syntax), and as raw gRPC frames (random and mutated bytes, bad length prefixes, flags), against
 * the API on a real HTTP/2 port and PostgreSQL. Every answer is a status other than INTERNAL or
 * UNKNOWN, a refused request changes no row of runs, journal, inbox or deadlines, and after each
 * batch the process's file descriptors, the stream slots and the heap are back to their baseline.
 * `WAYMARK_FUZZ=full` (npm run test:fuzz) runs 10,000 cases; npm test runs a short pass.
 * Raw HTTP/2 frame abuse is test/server/http2-abuse tests' (transport) business.
 */

const FULL = process.env.WAYMARK_FUZZ === 'full';
const CASES = FULL ? { binary: 4_000, json: 4_000, frames: 2_000 } : { binary: 80, json: 80, frames: 40 };
const BATCH = FULL ? 500 : 40;
const TIMEOUT = FULL ? 1_800_000 : 180_000;
/** Methods that may write: after one is accepted, background executions settle before the next case. */
const WRITERS = new Set(['StartRun', 'SendSignal', 'DecideApproval', 'ResumeRun', 'CancelRun', 'ForkRun', 'PurgeRuns']);
/**
 * Methods that only read. Every fuzzed method is one or the other (the first case checks it): an
 * accepted PurgeRuns that was in neither made the next refused call look as if it had deleted rows.
 */
const READERS = new Set([
  'GetRun', 'ListRuns', 'GetJournal', 'StreamRunEvents', 'ListWorkflows', 'GetRunProvenance', 'CreateStreamToken', 'CompareRuns',
  'ListApprovals', 'GetApproval',
]);
const INTERNAL = 13;
const UNKNOWN = 2;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let api: ApiServer;
let counts: Record<string, number>;
let hints: Hints;
const baseline = { fds: 0, heap: 0 };
const seen = { accepted: 0, refused: 0, heapPeak: 0, byCode: new Map<number | string, number>() };

beforeAll(async () => {
  api = await startApiServer({ limits: { payloadBytes: 16 * 1024 }, streams: 20, prefix: 'waymark_fuzz' });
  const parked = await api.engine.runStart({ namespace: 'default', workflowName: 'wait-signal', input: {}, execute: true });
  const approval = await api.engine.runStart({ namespace: 'default', workflowName: 'refund', input: { order: 'o-1', amount: 2 }, execute: true });
  const done = await api.engine.runStart({ namespace: 'default', workflowName: 'echo-flow', input: { value: 1 }, execute: true });
  const runIds = [parked.run.id, approval.run.id, done.run.id];
  hints = {
    namespace: fc.constantFrom('', 'default', 'other'),
    run_id: fc.oneof(fc.constantFrom(...runIds), fc.constant(randomUUID())),
    parent_run_id: fc.constantFrom('', ...runIds),
    workflow: fc.constantFrom('echo-flow', 'wait-signal', 'refund', 'ticker', 'nope', ''),
    name: fc.constantFrom('go', 'tick', ''),
    id: fc.constantFrom(`${approval.run.id}:${approval.waitingOn[0]?.seq ?? 1}`, `${parked.run.id}:1`, 'x:1'),
    by: fc.oneof(fc.constant('ann'), hostileString),
    input: fc.constantFrom(json({ order: 'o-2', amount: 1 }), json({ value: [1, { a: 'b' }] }), json({ ticks: 1 }), json({})),
    payload: fc.constantFrom(json({ n: 1 }), json({ qty: 3 }), json(null)),
    page_size: fc.integer({ min: -2, max: 1200 }),
    follow_suspended: fc.constant(false), // a follower of a parked run never ends by itself
  };
  counts = await settled();
  await warm();
}, 120_000);

afterAll(async () => {
  console.info(`fuzz: ${seen.accepted} accepted, ${seen.refused} refused; codes ${JSON.stringify([...seen.byCode])}; heap at most ${(seen.heapPeak / 1048576).toFixed(1)} MiB over its baseline after a batch`);
  await api?.close();
}, 60_000);

/** Row counts once nothing executes in the background (a signal or a decision kicks an inline execution). */
async function settled(): Promise<Record<string, number>> {
  let last = await api.rowCounts();
  for (let stable = 0; stable < 2;) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const now = await api.rowCounts();
    stable = api.deps.api.inline.leasesHeld === 0 && JSON.stringify(now) === JSON.stringify(last) ? stable + 1 : 0;
    last = now;
  }
  return last;
}

async function warm(): Promise<void> {
  // One call of each kind first, so lazily opened pool connections count in the baseline.
  await grpcRaw(api.address, RunService.method.listWorkflows, grpcFrame(new Uint8Array()));
  await connectJson(api.address, RunService.method.listRuns, '{}');
  gc();
  baseline.fds = readdirSync('/proc/self/fd').length;
  baseline.heap = process.memoryUsage().heapUsed;
}

/** What every answer must satisfy; `code` is the gRPC code (0 OK) or the Connect code string. */
async function check(method: DescMethod, code: number | string): Promise<void> {
  seen.byCode.set(code, (seen.byCode.get(code) ?? 0) + 1);
  expect(code, `${method.name} answered INTERNAL or UNKNOWN`).not.toBe(INTERNAL);
  expect(code).not.toBe(UNKNOWN);
  expect(code).not.toBe('internal');
  expect(code).not.toBe('unknown');
  if (code === 0 || code === 'ok') {
    seen.accepted++;
    if (WRITERS.has(method.name)) counts = await settled();
    return;
  }
  seen.refused++;
  expect(await api.rowCounts(), `a refused ${method.name} wrote`).toEqual(counts);
}

/** After each batch: nothing the cases opened is still held. */
async function backToBaseline(): Promise<void> {
  expect(api.deps.streams.open).toBe(0);
  for (let waited = 0; readdirSync('/proc/self/fd').length > baseline.fds + 8 && waited < 5_000; waited += 50) {
    await new Promise((resolve) => setTimeout(resolve, 50)); // closed sessions release their sockets shortly after
  }
  expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(baseline.fds + 8);
  gc();
  const heap = process.memoryUsage().heapUsed - baseline.heap;
  seen.heapPeak = Math.max(seen.heapPeak, heap);
  expect(heap, 'heap over its baseline after a batch').toBeLessThan(64 * 1024 * 1024);
}

/** Runs `cases` cases of `property` in batches, checking the baseline after each. */
async function inBatches(cases: number, property: fc.IAsyncProperty<[never]> | fc.IAsyncProperty<never>): Promise<void> {
  for (let done = 0; done < cases; done += BATCH) {
    await fc.assert(property as fc.IAsyncProperty<unknown[]>, { numRuns: Math.min(BATCH, cases - done), endOnFailure: true });
    await backToBaseline();
  }
}

const anyMethod = (services: DescService[] = [RunService, SignalService], streams = true) =>
  fc.constantFrom(...services.flatMap((s) => s.methods).filter((m) => streams || m.methodKind === 'unary'));

const headers = { 'grpc-timeout': '5S' };

describe('fuzz: requests built from the generated message types', () => {
  it('knows whether each fuzzed method writes', () => {
    const methods = [RunService, SignalService].flatMap((s) => s.methods.map((m) => m.name));
    expect(methods.filter((name) => WRITERS.has(name) === READERS.has(name))).toEqual([]);
  });

  it(`protobuf binary in gRPC frames (${CASES.binary} cases)`, { timeout: TIMEOUT }, async () => {
    const arbitrary = anyMethod().chain((method) => messageArbitrary(method.input, hints).map((message) => ({ method, message })));
    await inBatches(CASES.binary, fc.asyncProperty(arbitrary, async ({ method, message }) => {
      const res = await grpcRaw(api.address, method, grpcFrame(toBinary(method.input, message)), headers);
      await check(method, res.grpcStatus);
    }) as never);
  });

  it(`Connect JSON bodies, mutated (${CASES.json} cases)`, { timeout: TIMEOUT }, async () => {
    const mutation = fc.constantFrom('none', 'unknown-key', 'enum-name', 'wrong-type', 'surrogate', 'deep', 'truncate', 'array', 'empty');
    const arbitrary = anyMethod(undefined, false).chain((method) => fc.tuple(fc.constant(method), messageArbitrary(method.input, hints), mutation, fc.nat()));
    await inBatches(CASES.json, fc.asyncProperty(arbitrary, async ([method, message, how, n]) => {
      const res = await connectJson(api.address, method, jsonBody(method, message as never, how, n), { 'connect-timeout-ms': '5000' });
      await check(method, res.status === 200 ? 'ok' : String(res.json.code));
    }) as never);
  });

  it(`raw gRPC frames: random and mutated bytes, bad prefixes and flags (${CASES.frames} cases)`, { timeout: TIMEOUT }, async () => {
    const frame = fc.oneof(
      fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes)), // not even framed
      fc.uint8Array({ maxLength: 64 }).map((bytes) => grpcFrame(bytes)), // a frame of random bytes
      fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 32 }), fc.integer({ min: 0, max: 2 ** 32 - 1 })).map(([bytes, length]) => {
        const f = grpcFrame(bytes);
        f.writeUInt32BE(length, 1); // a length prefix that lies
        return f;
      }),
      fc.tuple(fc.uint8Array({ maxLength: 32 }), fc.integer({ min: 1, max: 255 })).map(([bytes, flags]) => {
        const f = grpcFrame(bytes);
        f[0] = flags; // compressed or unknown flags with no grpc-encoding
        return f;
      }),
      fc.tuple(fc.uint8Array({ maxLength: 16 }), fc.uint8Array({ maxLength: 16 })).map(([a, b]) => Buffer.concat([grpcFrame(a), grpcFrame(b)])), // two messages for a unary call
    );
    await inBatches(CASES.frames, fc.asyncProperty(anyMethod(), frame, async (method, body) => {
      const res = await grpcRaw(api.address, method, body, headers);
      await check(method, res.grpcStatus);
    }) as never);
  });
});

/** The Connect JSON text of `message`, mutated as `how` says. */
function jsonBody(method: DescMethod, message: never, how: string, n: number): string {
  let value: Record<string, unknown>;
  try {
    value = toJson(method.input, message) as Record<string, unknown>;
  } catch {
    value = {}; // NaN or a kindless Value has no JSON form: the mutation goes on an empty body
  }
  const fields = method.input.fields;
  const field = fields.length ? fields[n % fields.length]! : undefined;
  switch (how) {
    case 'unknown-key':
      value[`bogus_${n % 7}`] = n;
      break;
    case 'enum-name': {
      const e = fields.find((f) => f.fieldKind === 'enum' || (f.fieldKind === 'list' && f.listKind === 'enum'));
      if (e) value[e.jsonName] = e.fieldKind === 'list' ? ['NOT_A_VALUE'] : 'NOT_A_VALUE';
      break;
    }
    case 'wrong-type':
      if (field) value[field.jsonName] = [{ n }, 'x', n % 2 === 0][n % 3];
      break;
    case 'surrogate':
      return JSON.stringify({ ...value, ...(field ? { [field.jsonName]: 'a\ud800' } : {}), input: { s: '\udc00' }, labels: { k: '\ud83d' } });
    case 'deep': {
      let deep: unknown = 1;
      for (let i = 0; i < 40 + (n % 80); i++) deep = [deep];
      value.input = deep;
      value.payload = deep;
      break;
    }
    case 'truncate': {
      const text = JSON.stringify(value);
      return text.slice(0, Math.max(0, text.length - 1 - (n % 5)));
    }
    case 'array':
      return JSON.stringify([value]);
    case 'empty':
      return n % 2 === 0 ? '' : 'null';
  }
  return JSON.stringify(value);
}
