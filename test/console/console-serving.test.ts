import http2 from 'node:http2';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsoleAssets } from '../../src/server/transport/console-assets.js';
import { startApiServer, type ApiServer } from '../support/api-server.js';

/*
 * The web console's files on the API's port (src/server/transport/console-assets.ts) and HTTP/1.1 beside
 * h2c on it (src/server/transport/http1-bridge.ts): what a browser gets over HTTP/1.1 (it never speaks h2c),
 * what an HTTP/2 client gets, the caching and security headers, the SPA fallback, and Connect
 * calls over HTTP/1.1 going through the same authentication as over HTTP/2.
 */

let api: ApiServer;
let base: string;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'waymark-console-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>console</title><script type="module" src="/console/assets/app-abc123.js"></script>');
  writeFileSync(path.join(dir, 'assets', 'app-abc123.js'), `console.log(${JSON.stringify('x'.repeat(2000))});`);
  api = await startApiServer({ prefix: 'waymark_console', auth: {}, console: loadConsoleAssets(dir) });
  base = `http://${api.address}`;
}, 60_000);

afterAll(async () => {
  await api?.close();
});

function h2get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const session = http2.connect(u.origin);
    session.on('error', reject);
    const req = session.request({ ':path': u.pathname + u.search, ...headers });
    let body = '';
    let head: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (head = h));
    req.setEncoding('utf8').on('data', (d: string) => (body += d));
    req.on('end', () => {
      session.close();
      resolve({ status: Number(head[':status']), headers: head, body });
    });
    req.end();
  });
}

describe('the console on the API port', () => {
  it('serves index.html over HTTP/1.1 with a CSP, no-cache and an ETag, and a 304 for a matching ETag', async () => {
    const r = await fetch(`${base}/console/`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-cache');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(r.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await r.text()).toContain('<title>console</title>');
    const again = await fetch(`${base}/console/`, { headers: { 'if-none-match': r.headers.get('etag')! } });
    expect(again.status).toBe(304);
  });

  it('serves hashed assets as immutable, gzipped when asked', async () => {
    const r = await fetch(`${base}/console/assets/app-abc123.js`, { headers: { 'accept-encoding': 'gzip' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(r.headers.get('content-encoding')).toBe('gzip');
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await r.text()).toContain('console.log');
  });

  it('answers a deep link with index.html (SPA fallback), a missing asset with 404, / with a redirect', async () => {
    const deep = await fetch(`${base}/console/runs/01a2-some-run?tab=timeline`);
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<title>console</title>');
    expect((await fetch(`${base}/console/assets/missing-000.js`)).status).toBe(404);
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/console/');
  });

  it('serves the same files over HTTP/2 (h2c), as a TLS port does to browsers', async () => {
    const r = await h2get(`${base}/console/runs/x`);
    expect(r.status).toBe(200);
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(r.body).toContain('<title>console</title>');
  });

  it('serves Connect calls over HTTP/1.1 through the same authentication', async () => {
    const call = (headers: Record<string, string>) => fetch(`${base}/waymark.v1.RunService/ListRuns`, {
      method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"pageSize":1}',
    });
    const refused = await call({});
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('CREDENTIALS_MISSING');
    const bad = await call({ authorization: 'Bearer wmk_nope' });
    expect(bad.status).toBe(401);
  });

  it('a connection that has sent nothing yet (neither h2 nor HTTP/1.1) does not hold up other clients of either protocol', async () => {
    const [host, port] = [api.address.slice(0, api.address.lastIndexOf(':')), Number(api.address.slice(api.address.lastIndexOf(':') + 1))];
    const silent = net.connect(port, host);
    await new Promise((resolve) => silent.once('connect', resolve));
    expect((await fetch(`${base}/console/`)).status).toBe(200);
    expect((await h2get(`${base}/console/`)).status).toBe(200);
    expect(silent.destroyed).toBe(false);
    silent.destroy();
  });
});
