import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { Registry } from '../../src/engine/registry.js';
import type { FlowDefinition } from '../../src/engine/flow/flow-definition.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import { NS, shape } from '../engine/harness.js';
import { allowRule, closeMcpEngines, deliveriesLog, mcpEngine, startHttpMcpServer } from './mcp-fixture.js';

/*
 * MCP tools offered to the model by ctx.agent and used by flow nodes (docs/agents.md "MCP tools",
 * docs/flows.md), against the counting MCP server of fixtures/counting-mcp-server.mjs over
 * Streamable HTTP in its own process. The agent runs the real loop on the offline scripted model,
 * which makes up each call's arguments from the schema it was offered: the pinned one.
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

async function setup(workflows: Workflow[], tools: Record<string, typeof allowRule> = { refund: allowRule, lookup: allowRule }) {
  const registry = new Registry({ agent: createAgentRuntime({ env: {} }) }).register(...workflows);
  return mcpEngine(registry, http.url, { shop: { tools } });
}

const question = z.object({ q: z.string() });

describe('MCP tools in ctx.agent', () => {
  it('the model is offered the pinned tools and calls them; each call is journaled in the agent scope with its key', async () => {
    const wf = defineWorkflow({ name: 'mcp-agent', input: question }, async (ctx, { q }) => {
      const r = await ctx.agent(q, { model: 'scripted:auto', tools: ['shop.lookup', 'shop.refund'] });
      return { text: r.text, calls: r.toolCalls.map((c) => [c.toolName, c.outcome, c.input]) };
    });
    const { engine, store } = await setup([wf]);
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'mcp-agent', input: { q: 'o-agent' }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    // scripted:auto fills every required property of the schema it was offered: `amount` (required,
    // > 0) comes from the pinned schema of refund, so the model saw it.
    expect((run.output as { calls: unknown[] }).calls).toEqual([
      ['shop.lookup', 'ok', { order: 'o-agent' }],
      ['shop.refund', 'ok', { order: 'o-agent', amount: 1 }],
    ]);
    expect((run.output as { text: string }).text).toContain('order o-agent is paid');
    const entries = await store.journalList({ runId: run.id });
    const agentScoped = entries.filter((e) => e.scope.includes('agent:'));
    expect(shape(agentScoped).filter((s) => !s.includes('model')).map((s) => s.replace(/ @.*$/, ''))).toEqual([
      'ok step mcp:shop:tools/list', 'ok tool shop.lookup', 'running tool shop.refund', 'ok tool shop.refund',
    ]);
    const key = entries.find((e) => e.kind === 'tool' && e.status === 'running')!.idempotencyKey;
    expect(log.of('refund').filter((d) => d.args.order === 'o-agent').map((d) => [d.key, d.header])).toEqual([[key, key]]);
  });

  it('policies hold for the model: an `ask` MCP tool parks the run, a denial is an answer the model reads', async () => {
    const wf = defineWorkflow({ name: 'mcp-agent-ask', input: question }, async (ctx, { q }) => {
      const r = await ctx.agent(q, { model: 'scripted:auto', tools: ['shop.refund'] });
      return { text: r.text, calls: r.toolCalls.map((c) => [c.toolName, c.outcome]) };
    });
    const { engine } = await setup([wf], { refund: { ...allowRule, policy: 'ask' } });
    const started = await engine.runStart({ namespace: NS, workflowName: 'mcp-agent-ask', input: { q: 'o-agent-ask' }, execute: true });
    expect(started.run.status).toBe('SUSPENDED');
    expect(started.waitingOn[0]).toMatchObject({ kind: 'approval', name: 'tool:shop.refund' });
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: false, by: 'ops', requestId: 'r1' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toMatchObject({ calls: [['shop.refund', 'denied']] });
    expect((done!.run!.output as { text: string }).text).toContain('denied by ops');
    expect(log.of('refund').filter((d) => d.args.order === 'o-agent-ask')).toHaveLength(0);
  });
});

const refundFlow = (tool: string, agentTools: string[]): FlowDefinition => ({
  name: 'mcp-flow',
  stateSchema: { type: 'object', properties: { order: { type: 'string' }, refund: {}, review: {} } },
  start: 'refund',
  nodes: [
    { id: 'refund', tool: { tool, arguments: { order: '{{ state.order }}', amount: 7 }, into: 'refund' } },
    { id: 'review', agent: { model: 'scripted:auto', prompt: '{{ state.order }}', tools: agentTools, into: 'review' } },
    { id: 'done', end: { output: { refund: '{{ state.refund }}' } } },
  ],
  edges: [{ from: 'refund', to: 'review' }, { from: 'review', to: 'done' }],
});

describe('MCP tools in flows', () => {
  it('a tool node and an agent node call MCP tools; registration knows the namespace\'s servers and their tools', async () => {
    const { engine, store } = await setup([]);
    const refused = async (flow: FlowDefinition) => engine.flows.register({ namespace: NS, flow }).then(() => [], (e: { violations?: unknown }) => e.violations);
    expect(await refused(refundFlow('nowhere.refund', ['shop.lookup']))).toEqual([
      { field: 'flow.nodes[0].tool.tool', description: expect.stringContaining('MCP server "nowhere", which is not registered in this namespace') },
    ]);
    expect(await refused(refundFlow('shop.refund', ['shop.reject']))).toEqual([
      { field: 'flow.nodes[1].agent.tools[0]', description: expect.stringContaining('names tool "reject", which MCP server "shop" does not expose') },
    ]);
    // A registration exposing every tool: registration asks the server for its list.
    await store.mcpServerPut({ namespace: NS, name: 'all', transport: { kind: 'http', url: http.url, headers: {} }, tools: {} });
    expect(await refused(refundFlow('all.refund', ['all.vanish']))).toEqual([
      { field: 'flow.nodes[1].agent.tools[0]', description: expect.stringContaining('names tool "vanish", which MCP server "all" does not list') },
    ]);

    await engine.flows.register({ namespace: NS, flow: refundFlow('shop.refund', ['shop.lookup']) });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'mcp-flow', input: { order: 'o-flow' }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ refund: { structuredContent: { refunded: 'o-flow', amount: 7 } } });
    const entries = await store.journalList({ runId: run.id });
    const tools = entries.filter((e) => e.kind === 'tool').map((e) => `${e.status} ${e.name}`);
    expect(tools).toEqual(['running shop.refund', 'ok shop.refund', 'ok shop.lookup']);
    expect(entries.filter((e) => e.name === 'mcp:shop:tools/list')).toHaveLength(1);
    expect(log.of('refund').filter((d) => d.args.order === 'o-flow')).toHaveLength(1);
    expect(log.of('lookup').filter((d) => d.args.order === 'o-flow')).toHaveLength(1);
  });
});
