import http2 from 'node:http2';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { findTrailerError } from '@connectrpc/connect/protocol-grpc';
import { defineWorkflow } from 'waymark';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ErrorInfoSchema, QuotaFailureSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { GetRunRequestSchema, RunService, StartRunRequestSchema } from '../../src/gen/waymark/v1/run_service_pb.js';
import { registerRoutes } from '../../src/server/routes/register-routes.js';
import { ClientBuffers } from '../../src/server/transport/client-buffers.js';
import { startGrpcServer, type GrpcServer } from '../../src/server/transport/grpc-server.js';
import { until } from '../support/until.js';
import { apiHarness, FIXTURE_ITEMS, json, type ApiHarness } from './api-harness.js';
import { grpcFrame, rawRequest, stalledReader, type RawResponse, type StalledReader } from './raw-http2.js';

/*
 * What one slow client may hold in server memory (issue 16, "Build"; src/server/transport/client-buffers.ts):
 * a client that opens streams and never reads, while the server has lots to send (a run whose
 * history is big events). Its unread bytes stay within WAYMARK_CLIENT_MAX_BUFFERED_BYTES, its
 * streams past that are reset with ENHANCE_YOUR_CALM, its new calls are refused with
 * CLIENT_BUFFER_LIMIT and write nothing, the server's heap stays near its baseline, and another
 * client is served meanwhile. Real HTTP/2 with raw node:http2 clients; 127.0.0.2 is the other client.
 */

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const EVENT_BYTES = 300_000;
const EVENTS = 8;
const LIMIT = 1 << 20;
const READERS = 40;

/** Emits EVENTS events of EVENT_BYTES, then waits for a signal: followers stay open on a big history. */
const fatEvents = defineWorkflow({ name: 'fat-events', input: z.object({}) }, async (ctx) => {
  for (let i = 0; i < EVENTS; i++) await ctx.emit({ type: 'blob', i, blob: 'x'.repeat(EVENT_BYTES) });
  await ctx.signal('end');
  return {};
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function apiServer(): Promise<{ t: ApiHarness; server: GrpcServer }> {
  const t = apiHarness({ items: [...FIXTURE_ITEMS, fatEvents as never], streams: 500 });
  const server = await startGrpcServer({
    auth: 'off', // loopback, a transport test
    host: '127.0.0.1', port: 0, logger: t.deps.logger, maxRequestBytes: 4 << 20, routes: (r) => registerRoutes(r, t.deps),
    clientLimits: { bufferedBytes: LIMIT, streams: 200 },
  });
  cleanups.push(() => server.close(1_000));
  return { t, server };
}

function memory(): number {
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

function grpcCall(server: GrpcServer, path: string, body: Buffer, localAddress?: string): Promise<RawResponse> {
  return rawRequest(server.url, { ':path': path, 'content-type': 'application/grpc', te: 'trailers' }, body, localAddress ? { localAddress } : {});
}

function statusOf(res: RawResponse) {
  const fields = res.trailers['grpc-status'] !== undefined ? res.trailers : res.headers;
  return findTrailerError(new Headers(Object.entries(fields).filter(([k]) => !k.startsWith(':')).map(([k, v]) => [k, String(v)])));
}

describe('a client that never reads (WAYMARK_CLIENT_MAX_BUFFERED_BYTES)', () => {
  it('holds at most its limit: its other streams are reset, its new calls refused, the heap stays bounded, another client is served', { timeout: 120_000 }, async () => {
    const { t, server } = await apiServer();
    const { run } = await t.runs.startRun({ workflow: 'fat-events', input: json({}), wait: true });
    const runId = run!.id;
    const baseline = memory();

    const readers: StalledReader[] = [];
    const reset = new Set<StalledReader>();
    const refusedStreams = new Map<StalledReader, string | undefined>();
    for (let i = 0; i < READERS; i++) {
      // include_large_payloads: the events themselves (300 KB each) fill the stream, not their references.
      const r = stalledReader(server.url, RunService.method.streamRunEvents, { runId, followSuspended: true, includeLargePayloads: true });
      r.responded.catch(() => undefined);
      let headers: http2.IncomingHttpHeaders = {};
      r.stream.on('response', (h) => (headers = { ...headers, ...h }));
      r.stream.on('trailers', (h) => (headers = { ...headers, ...h }));
      r.stream.once('close', () => {
        if (r.stream.rstCode === http2.constants.NGHTTP2_ENHANCE_YOUR_CALM) reset.add(r);
        else refusedStreams.set(r, String(headers['grpc-status']));
      });
      readers.push(r);
    }
    cleanups.push(() => readers.forEach((r) => r.session.destroy()));
    // Every stream is held (blocked on flow control), reset when its write would pass the client's
    // limit, or, once the client is over it, refused before its handler runs.
    await until('every stream held, reset or refused', () =>
      (reset.size > 0 && reset.size + refusedStreams.size + t.deps.streams.open === READERS) || undefined);
    expect([...refusedStreams.values()]).toEqual(Array.from({ length: refusedStreams.size }, () => '8')); // RESOURCE_EXHAUSTED

    const client = '127.0.0.1';
    expect(server.clientBuffers.peakBytes).toBeLessThanOrEqual(LIMIT);
    expect(server.clientBuffers.queued(client)).toBeLessThanOrEqual(LIMIT);
    // At most as many streams as fit in the limit are left holding bytes (one message each, or part of one).
    expect(t.deps.streams.open).toBeLessThanOrEqual(Math.ceil(LIMIT / EVENT_BYTES) + 1);
    // Held: a few streams' messages and read-ahead (about 11 MiB here), not READERS' (123 MiB without the limit).
    expect(memory() - baseline).toBeLessThan(24 * 1024 * 1024);
    expect(t.logs.some((l) => l.msg.includes('WAYMARK_CLIENT_MAX_BUFFERED_BYTES') && l.client === client)).toBe(true);

    // A new call of that client is refused before its handler runs: nothing is written.
    const before = (await t.runs.listRuns({})).runs.length;
    const refused = await grpcCall(server, '/waymark.v1.RunService/StartRun',
      grpcFrame(StartRunRequestSchema, { workflow: 'echo-flow', input: json({ value: 1 }) }));
    const err = statusOf(refused);
    expect(err?.code).toBe(8); // RESOURCE_EXHAUSTED
    expect(err?.findDetails(ErrorInfoSchema)[0]).toMatchObject({
      reason: 'CLIENT_BUFFER_LIMIT', domain: 'waymark', metadata: { client, limit: 'WAYMARK_CLIENT_MAX_BUFFERED_BYTES', limit_bytes: String(LIMIT) },
    });
    expect(err?.findDetails(QuotaFailureSchema)[0]?.violations[0]?.subject).toBe(`client:${client}`);
    expect((await t.runs.listRuns({})).runs).toHaveLength(before);

    // Another client is served: a call, and a stream it reads to the last event of the history.
    const other = await grpcCall(server, '/waymark.v1.RunService/GetRun', grpcFrame(GetRunRequestSchema, { runId }), '127.0.0.2');
    expect(statusOf(other)).toBeUndefined();
    expect(other.body.length).toBeGreaterThan(0);
    const reader = stalledReader(server.url, RunService.method.streamRunEvents, { runId, followSuspended: true, includeLargePayloads: true }, 1 << 20, { localAddress: '127.0.0.2' });
    cleanups.push(() => reader.session.destroy());
    let received = 0;
    reader.stream.on('data', (chunk: Buffer) => (received += chunk.length));
    reader.stream.resume();
    await until('the other client read the whole history', () => received > EVENTS * EVENT_BYTES || undefined);
    reader.session.destroy();

    // The slow client goes: its bytes, its stream slots and the heap come back.
    for (const r of readers) r.session.destroy();
    await until('the slow client\'s slots and bytes back', () => (t.deps.streams.open === 0 && server.clientBuffers.queued(client) === 0) || undefined);
    expect(server.clientBuffers.full(client)).toBe(false);
    const again = await grpcCall(server, '/waymark.v1.RunService/GetRun', grpcFrame(GetRunRequestSchema, { runId }));
    expect(statusOf(again)).toBeUndefined();
    await until('the heap back near its baseline', () => memory() - baseline < 8 * 1024 * 1024 || undefined);
  });
});

describe('ClientBuffers', () => {
  it('lets one message larger than the limit go out alone, refuses what would pass it, and lets the client back in under half', () => {
    const b = new ClientBuffers(100);
    expect(b.take('a', 250)).toBe(true); // alone: a message over the limit still goes out
    expect(b.take('a', 1)).toBe(false);
    expect(b.full('a')).toBe(true);
    expect(b.take('b', 60)).toBe(true); // another client has its own budget
    b.give('a', 250);
    expect(b.full('a')).toBe(false);
    expect(b.take('a', 60)).toBe(true);
    expect(b.take('a', 40)).toBe(true);
    expect(b.take('a', 1)).toBe(false);
    b.give('a', 40);
    expect(b.full('a')).toBe(true); // 60 left: still over half the limit
    b.give('a', 20);
    expect(b.full('a')).toBe(false);
    expect(b.peakBytes).toBe(250);
  });
});
