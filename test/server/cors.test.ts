import { createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { rawRequest, startApiServer, type ApiServer } from '../support/api-server.js';
import { json } from './api-harness.js';

/*
 * A browser's path (docs/security.md "Browsers"): the CORS preflight, then gRPC-Web and Connect
 * requests from an allowed origin carrying a stream token, on a real server with WAYMARK_CORS_ORIGINS.
 */

const ORIGIN = 'https://app.example.com';
let s: ApiServer;
let runId = '';
let token = '';

beforeAll(async () => {
  s = await startApiServer({ prefix: 'waymark_cors', auth: { streamTokenSecret: 'x'.repeat(40), corsOrigins: [ORIGIN] } });
  const { secret } = await s.deps.api.keys.create({ name: 'app backend', namespace: 'shop', scopes: ['runs:read', 'runs:write'], createdByKeyId: null });
  const runs = createClient(RunService, createConnectTransport({ baseUrl: s.server.url, httpVersion: '2' }));
  const auth = { headers: { authorization: `Bearer ${secret}` } };
  runId = (await runs.startRun({ workflow: 'echo-flow', input: json({ value: 1 }), wait: true }, auth)).run!.id;
  token = (await runs.createStreamToken({ runId }, auth)).token;
}, 120_000);

afterAll(async () => {
  await s?.close();
}, 120_000);

const preflight = (origin: string) => rawRequest(s.address, '/waymark.v1.RunService/StreamRunEvents', {
  ':method': 'OPTIONS', origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-grpc-web',
}, new Uint8Array());

describe('CORS', () => {
  it('answers the preflight of an allowed origin with the methods and headers gRPC-Web and Connect need', async () => {
    const res = await preflight(ORIGIN);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    expect(String(res.headers['access-control-allow-methods'])).toContain('POST');
    const allowed = String(res.headers['access-control-allow-headers']).toLowerCase().split(', ');
    expect(allowed).toEqual(expect.arrayContaining(['authorization', 'content-type', 'x-grpc-web', 'connect-protocol-version']));
  });

  it('refuses the preflight of another origin, without CORS headers', async () => {
    const res = await preflight('https://evil.example');
    expect(res.status).toBe(403);
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('a gRPC-Web stream and a Connect call from the allowed origin, with a stream token, carry the CORS headers', async () => {
    const headers: Headers[] = [];
    const opts = { headers: { origin: ORIGIN, authorization: `Bearer ${token}` }, onHeader: (h: Headers) => headers.push(h) };
    const web = createClient(RunService, createGrpcWebTransport({ baseUrl: s.server.url, httpVersion: '2' }));
    const events = [];
    for await (const e of web.streamRunEvents({ runId }, opts)) events.push(e);
    expect(events.length).toBeGreaterThan(0);
    const connect = createClient(RunService, createConnectTransport({ baseUrl: s.server.url, httpVersion: '2' }));
    expect((await connect.getRun({ runId }, opts)).run?.status).toBeGreaterThan(0);
    expect(headers.map((h) => h.get('access-control-allow-origin'))).toEqual([ORIGIN, ORIGIN]);
    expect(headers[0]!.get('access-control-expose-headers')?.toLowerCase()).toContain('grpc-status');
    // Another origin's request is served (CORS is not access control) but without the headers a browser needs to read it.
    const other: Headers[] = [];
    await connect.getRun({ runId }, { headers: { origin: 'https://evil.example', authorization: `Bearer ${token}` }, onHeader: (h) => other.push(h) });
    expect(other[0]!.get('access-control-allow-origin')).toBeNull();
  });
});
