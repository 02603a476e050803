import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { Registry } from '../../src/engine/registry.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import type { McpToolRule, McpTransport } from '../../src/store/store.js';
import { NS, shape } from '../engine/harness.js';
import { allowRule, closeMcpEngines, deliveriesLog, mcpEngine, startHttpMcpServer, stdioMcpTransport } from './mcp-fixture.js';

/*
 * ctx.tool('server.tool') against real MCP servers (docs/mcp.md): the counting server of
 * fixtures/counting-mcp-server.mjs, started as a subprocess over Streamable HTTP and as a stdio
 * command the connector spawns. Its deliveries file is the oracle: what reached the server, with
 * which key, outside the engine and the journal.
 */

const log = deliveriesLog();
let http: Awaited<ReturnType<typeof startHttpMcpServer>>;

beforeAll(async () => {
  http = await startHttpMcpServer(log.file);
});
afterAll(async () => {
  await closeMcpEngines();
  await http.stop();
  log.remove();
});

const allow = allowRule;

async function setup(workflows: Workflow[], servers: Record<string, { transport?: McpTransport; tools?: Record<string, McpToolRule> }>) {
  const { store, engine } = await mcpEngine(new Registry().register(...workflows), http.url, servers);
  return { store, engine };
}

const order = z.object({ order: z.string() });

describe('MCP tools from code', () => {
  it.each(['http', 'stdio'] as const)('a run calls an MCP tool over %s: the tool list is pinned, the call journaled, the key sent', async (kind) => {
    const wf = defineWorkflow({ name: `refunds-${kind}`, input: order }, async (ctx, { order: id }) => ctx.tool('shop.refund', { order: id, amount: 12 }));
    const transport = kind === 'http' ? undefined : stdioMcpTransport(log.file);
    const { engine, store } = await setup([wf], { shop: { transport, tools: { refund: allow, lookup: allow } } });
    const orderId = `o-${kind}-1`;
    const { run } = await engine.runStart({ namespace: NS, workflowName: `refunds-${kind}`, input: { order: orderId }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ structuredContent: { refunded: orderId, amount: 12 } });
    const entries = await store.journalList({ runId: run.id });
    expect(shape(entries)).toEqual(['ok step mcp:shop:tools/list', 'running tool shop.refund', 'ok tool shop.refund']);
    // The pin: the exposed tools only (reject is not listed in the registration), their schemas, annotations and rules, and a digest.
    const pin = entries.find((e) => e.name === 'mcp:shop:tools/list')!.payload as { digest: string; tools: { name: string; mutating: boolean; inputSchema: unknown; annotations: unknown }[] };
    expect(pin.digest).toMatch(/^[0-9a-f]{64}$/);
    expect(pin.tools.map((t) => [t.name, t.mutating])).toEqual([['lookup', false], ['refund', true]]);
    expect(pin.tools[1]!.inputSchema).toMatchObject({ type: 'object', required: ['order', 'amount'] });
    expect(pin.tools[0]!.annotations).toMatchObject({ readOnlyHint: true });
    const key = entries.find((e) => e.status === 'running')!.idempotencyKey;
    const delivered = log.of('refund').filter((d) => d.args.order === orderId);
    expect(delivered.map((d) => d.key)).toEqual([key]);
    expect(delivered[0]!.header).toBe(kind === 'http' ? key : null);
  });

  it('a resumed run replays the call and the pin from the journal: no second delivery, the pinned policy holds', async () => {
    const wf = defineWorkflow({ name: 'refund-then-check', input: order }, async (ctx, { order: id }) => {
      const refunded = await ctx.tool('shop.refund', { order: id, amount: 5 });
      await ctx.approve({ title: 'check the order?' });
      const checked = await ctx.tool('shop.lookup', { order: id });
      return { refunded, checked };
    });
    const { engine, store } = await setup([wf], { shop: { tools: { refund: allow, lookup: allow } } });
    const started = await engine.runStart({ namespace: NS, workflowName: 'refund-then-check', input: { order: 'o-replay' }, execute: true });
    expect(started.run.status).toBe('SUSPENDED');
    // The registration changes while the run waits: lookup is denied now. The run keeps what it pinned.
    await store.mcpServerPut({ namespace: NS, name: 'shop', transport: { kind: 'http', url: http.url, headers: {} }, tools: { refund: allow, lookup: { ...allow, policy: 'deny' } } });
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'r1' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(log.of('refund').filter((d) => d.args.order === 'o-replay')).toHaveLength(1);
    expect(log.of('lookup').filter((d) => d.args.order === 'o-replay')).toHaveLength(1);
    const entries = await store.journalList({ runId: started.run.id });
    expect(shape(entries).filter((s) => s.includes('tools/list'))).toEqual(['ok step mcp:shop:tools/list']);
  });

  it('an `ask` tool parks the run on an approval; nothing is delivered until it is approved', async () => {
    const wf = defineWorkflow({ name: 'guarded-refund', input: order }, async (ctx, { order: id }) => ctx.tool('guarded.refund', { order: id, amount: 30 }));
    const { engine, store } = await setup([wf], { guarded: { tools: { refund: { policy: 'ask', mutating: null, timeoutMs: null } } } });
    const started = await engine.runStart({ namespace: NS, workflowName: 'guarded-refund', input: { order: 'o-ask' }, execute: true });
    expect(started.run.status).toBe('SUSPENDED');
    expect(started.waitingOn[0]).toMatchObject({ kind: 'approval' });
    expect(log.of('refund').filter((d) => d.args.order === 'o-ask')).toHaveLength(0);
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ops', requestId: 'r1' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toMatchObject({ structuredContent: { refunded: 'o-ask' } });
    const delivered = log.of('refund').filter((d) => d.args.order === 'o-ask');
    const entries = await store.journalList({ runId: started.run.id });
    expect(delivered.map((d) => d.key)).toEqual([entries.find((e) => e.status === 'running' && e.kind === 'tool')!.idempotencyKey]);
  });

  it('a dry run calls only the read-only tool; the mutating one returns the dry-run placeholder', async () => {
    const wf = defineWorkflow({ name: 'dry-refund', input: order }, async (ctx, { order: id }) => {
      const checked = await ctx.tool('shop.lookup', { order: id });
      const refunded = await ctx.tool('shop.refund', { order: id, amount: 1 });
      return { checked, refunded };
    });
    const { engine } = await setup([wf], { shop: {} });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'dry-refund', input: { order: 'o-dry' }, dryRun: true, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ checked: { content: [{ text: 'order o-dry is paid' }] }, refunded: { __dryRun: true, tool: 'shop.refund' } });
    expect(log.of('lookup').filter((d) => d.args.order === 'o-dry')).toHaveLength(1);
    expect(log.of('refund').filter((d) => d.args.order === 'o-dry')).toHaveLength(0);
  });

  it('refuses arguments against the pinned schema, and a tool the registration does not expose, before anything is delivered', async () => {
    const wf = defineWorkflow({ name: 'bad-calls', input: z.object({}) }, async (ctx) => {
      const bad = await ctx.tool('shop.refund', { order: 'o-bad', amount: -1 }).catch((e: Error) => e.name);
      const hidden = await ctx.tool('shop.reject', { order: 'o-bad' }).catch((e: Error) => e.name);
      return { bad, hidden };
    });
    const { engine } = await setup([wf], { shop: { tools: { refund: allow } } });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'bad-calls', input: {}, execute: true });
    expect(run.output).toEqual({ bad: 'InvalidInputError', hidden: 'ToolNotFoundError' });
    expect(log.read().filter((d) => d.args.order === 'o-bad')).toHaveLength(0);
  });

  it('a tool that answers isError fails the call once, without retries; an unknown server fails the run\'s pin', async () => {
    const wf = defineWorkflow({ name: 'rejected', input: z.object({}) }, async (ctx) => {
      const rejected = await ctx.tool('shop.reject', { order: 'o-rej' }).catch((e: { errorName?: string; message: string }) => e.message);
      const missing = await ctx.tool('nowhere.refund', { order: 'o-rej', amount: 1 }).catch((e: { message: string }) => e.message);
      return { rejected, missing };
    });
    const { engine } = await setup([wf], { shop: {} });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'rejected', input: {}, execute: true });
    const out = run.output as { rejected: string; missing: string };
    expect(out.rejected).toContain('cannot be refunded');
    expect(out.missing).toContain('MCP server "nowhere" is not registered');
    expect(log.of('reject').filter((d) => d.args.order === 'o-rej')).toHaveLength(1);
  });
});
