import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { NS, setup, shape } from './harness.js';

/** A local HTTP server that records what it receives, standing in for a downstream API. */
let server: Server;
let base: string;
const received: { method: string; url: string; key: string | undefined; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ method: req.method!, url: req.url!, key: req.headers['idempotency-key'] as string | undefined, body });
      res.setHeader('content-type', 'application/json');
      res.setHeader('set-cookie', 'secret=1');
      res.end(JSON.stringify({ echoed: body ? JSON.parse(body) : null, method: req.method }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('built-in tools', () => {
  it('http sends the effect\'s idempotency key; GET is read-only (one entry), POST mutating (intent first)', async () => {
    const wf = defineWorkflow({ name: 'calls', input: z.object({ base: z.string() }) }, async (ctx, { base: url }) => {
      const got = await ctx.tool('http', { url: `${url}/items` });
      const posted = await ctx.tool('http', { url: `${url}/items`, method: 'POST', body: { sku: 'w' } });
      return { got, posted };
    });
    const { engine, store } = setup([wf]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'calls', input: { base }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    const out = run.output as { got: Record<string, unknown>; posted: Record<string, unknown> };
    expect(out.got).toMatchObject({ status: 200, ok: true, body: { echoed: null, method: 'GET' }, headers: { 'content-type': 'application/json' } });
    expect(out.got.headers).not.toHaveProperty('set-cookie');
    expect(out.posted).toMatchObject({ status: 200, body: { echoed: { sku: 'w' }, method: 'POST' } });
    const entries = await store.journalList({ runId: run.id });
    expect(shape(entries)).toEqual(['ok tool http', 'running tool http', 'ok tool http']);
    const keys = entries.filter((e) => e.kind === 'tool' && e.refSeq === null).map((e) => e.idempotencyKey);
    expect(received.map((r) => [r.method, r.key])).toEqual([['GET', keys[0]], ['POST', keys[1]]]);
  });

  it('echo returns its input and writes one entry', async () => {
    const wf = defineWorkflow({ name: 'echoes', input: z.object({}) }, async (ctx) => ctx.tool('echo', { hello: ['world'] }));
    const { engine, store } = setup([wf]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'echoes', input: {}, execute: true });
    expect(run.output).toEqual({ hello: ['world'] });
    expect(shape(await store.journalList({ runId: run.id }))).toEqual(['ok tool echo']);
  });

  it('http refuses a malformed request before anything is journaled', async () => {
    const wf = defineWorkflow({ name: 'bad-call', input: z.object({}) }, async (ctx) => ctx.tool('http', { url: 'not a url' }));
    const { engine, store } = setup([wf]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'bad-call', input: {}, execute: true });
    expect(run.error).toMatchObject({ name: 'InvalidInputError', details: { violations: [{ field: 'url' }] } });
    expect(shape(await store.journalList({ runId: run.id }))).toEqual([]);
  });
});

describe('the http tool retries what a server may answer otherwise later', () => {
  /** A downstream that answers each path's deliveries from a script of statuses (then 200), recording each one's key. */
  let flaky: Server;
  let flakyBase: string;
  const scripts = new Map<string, { status: number; headers?: Record<string, string> }[]>();
  const deliveries: { path: string; key: string | undefined }[] = [];
  beforeAll(async () => {
    flaky = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const path = req.url!;
        deliveries.push({ path, key: req.headers['idempotency-key'] as string | undefined });
        const next = scripts.get(path)?.shift() ?? { status: 200 };
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        res.end(JSON.stringify({ path, status: next.status }));
      });
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    flakyBase = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => flaky.close(() => resolve())));

  const wf = defineWorkflow({ name: 'posts', input: z.object({ url: z.string() }) }, async (ctx, { url }) =>
    ctx.tool('http', { url, method: 'POST', body: { n: 1 } }).catch((e: unknown) => ({ failed: (e as Error).name, attempts: (e as { attempts?: number }).attempts })));

  /** Fires due backoff timers and executes what they woke, as the sweeper and an executor would. */
  async function drive(engine: ReturnType<typeof setup>['engine'], clock: ReturnType<typeof setup>['clock']): Promise<void> {
    for (let i = 0; i < 5; i++) {
      clock.advance(120_000);
      if ((await engine.suspensionsResolveDue({ limit: 10 })).resolved.length === 0) return;
      await engine.runExecutePending();
    }
  }

  it('503 twice, then 200: three deliveries with one idempotency key, three attempts journaled, SUCCEEDED', async () => {
    scripts.set('/pay', [{ status: 503 }, { status: 503 }]);
    const { engine, store, clock } = setup([wf]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'posts', input: { url: `${flakyBase}/pay` }, execute: true });
    expect(run.status).toBe('SUSPENDED');
    await drive(engine, clock);
    const final = await store.runGet({ runId: run.id, namespace: NS });
    expect(final.status).toBe('SUCCEEDED');
    expect(final.output).toMatchObject({ status: 200, ok: true });
    const mine = deliveries.filter((d) => d.path === '/pay');
    expect(mine).toHaveLength(3);
    expect(new Set(mine.map((d) => d.key)).size).toBe(1);
    const entries = await store.journalList({ runId: run.id });
    expect(mine[0]!.key).toBe(entries.find((e) => e.kind === 'tool')!.idempotencyKey);
    expect(entries.filter((e) => e.kind === 'tool' && e.status === 'running').map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(entries.filter((e) => e.status === 'error').map((e) => e.error)).toMatchObject([
      { name: 'HttpStatusError', details: { status: 503 } }, { name: 'HttpStatusError', details: { status: 503 } },
    ]);
  });

  it('429 waits at least its Retry-After; a 404 is a result, not retried; exhaustion is RetriesExhaustedError', async () => {
    scripts.set('/slow', [{ status: 429, headers: { 'retry-after': '7' } }]);
    scripts.set('/gone', [{ status: 404 }]);
    scripts.set('/down', [{ status: 500 }, { status: 502 }, { status: 504 }]);
    const { engine, store, clock } = setup([wf]);
    const slow = await engine.runStart({ namespace: NS, workflowName: 'posts', input: { url: `${flakyBase}/slow` }, execute: true });
    const timer = (await store.journalList({ runId: slow.run.id })).find((e) => e.status === 'suspended')!;
    expect(timer.payload).toMatchObject({ key: 'retry', attempt: 2, delayMs: 7000 });
    const gone = await engine.runStart({ namespace: NS, workflowName: 'posts', input: { url: `${flakyBase}/gone` }, execute: true });
    expect(gone.run.status).toBe('SUCCEEDED');
    expect(gone.run.output).toMatchObject({ status: 404, ok: false });
    expect(deliveries.filter((d) => d.path === '/gone')).toHaveLength(1);
    const down = await engine.runStart({ namespace: NS, workflowName: 'posts', input: { url: `${flakyBase}/down` }, execute: true });
    await drive(engine, clock);
    expect((await store.runGet({ runId: down.run.id, namespace: NS })).output).toEqual({ failed: 'RetriesExhaustedError', attempts: 3 });
    expect(deliveries.filter((d) => d.path === '/down')).toHaveLength(3);
  });
});
