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
