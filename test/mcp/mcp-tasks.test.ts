import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { createAgentRuntime } from '../../src/agent/agent-runtime.js';
import { Registry } from '../../src/engine/registry.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { SdkMcpConnector } from '../../src/mcp/sdk-mcp-connector.js';
import { NS, shape, TTL } from '../engine/harness.js';
import { until } from '../support/until.js';
import { closeMcpEngines, deliveriesLog, mcpEngine, startTaskMcpServer } from './mcp-fixture.js';

/*
 * MCP tasks (docs/mcp.md "Tasks") against the task server of fixtures/task-mcp-server.mjs (the MCP
 * SDK's server side with its experimental task support), a subprocess over Streamable HTTP:
 * stateless for a task that works until the test releases it, with sessions for a task that asks
 * its client a question (input_required). The deliveries file is the oracle: tools/call deliveries
 * per idempotency key, each tasks/result await, and the answer the server got.
 */

const log = deliveriesLog();
const release = mkdtempSync(path.join(tmpdir(), 'waymark-mcp-release-'));
let stateless: Awaited<ReturnType<typeof startTaskMcpServer>>;
let stateful: Awaited<ReturnType<typeof startTaskMcpServer>>;

beforeAll(async () => {
  [stateless, stateful] = await Promise.all([startTaskMcpServer(log.file, release), startTaskMcpServer(log.file, release, { stateful: true })]);
});
afterAll(async () => {
  await closeMcpEngines();
  await Promise.all([stateless.stop(), stateful.stop()]);
  log.remove();
  rmSync(release, { recursive: true, force: true });
});

const byOrder = z.object({ order: z.string() });
const slow = defineWorkflow({ name: 'slow-refund', input: byOrder }, async (ctx, { order }) => ctx.tool('tasks.slow_refund', { order }));
const confirm = defineWorkflow({ name: 'confirm-refund', input: byOrder }, async (ctx, { order }) => ctx.tool('tasks.confirm_refund', { order }));

describe('MCP tasks', () => {
  it('a task tool is called once; its handle is journaled as the call\'s result and the run awaits the task', async () => {
    const { engine, store } = await mcpEngine(new Registry().register(slow), stateless.url, { tasks: {} });
    const started = engine.runStart({ namespace: NS, workflowName: 'slow-refund', input: { order: 'o-slow' }, execute: true });
    // The run awaits the task (tasks/result reached the server): only then is the task allowed to finish.
    const created = await until('the task created', () => log.of('slow_refund').find((d) => d.args.order === 'o-slow'));
    await until('the await of the task', () => log.of('tasks/result').find((d) => d.taskId === created.taskId));
    writeFileSync(path.join(release, 'o-slow'), '');
    const { run } = await started;
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ structuredContent: { refunded: 'o-slow', taskId: created.taskId } });
    const entries = await store.journalList({ runId: run.id });
    expect(shape(entries)).toEqual(['ok step mcp:tasks:tools/list', 'running tool tasks.slow_refund', 'ok tool tasks.slow_refund', 'ok step mcp:tasks:tasks/result']);
    const pin = entries.find((e) => e.name === 'mcp:tasks:tools/list')!.payload as { tools: { name: string; taskSupport?: string }[] };
    expect(pin.tools.find((t) => t.name === 'slow_refund')!.taskSupport).toBe('required');
    const call = entries.filter((e) => e.kind === 'tool');
    expect(call[1]!.payload).toEqual({ mcpTask: { taskId: created.taskId, status: 'working' } });
    const key = call[0]!.idempotencyKey;
    expect(log.of('slow_refund').filter((d) => d.args.order === 'o-slow').map((d) => d.key)).toEqual([key]);
    expect(log.of('slow_refund.applied').filter((d) => d.args.order === 'o-slow')).toHaveLength(1);
  });

  it('a task that asks a question parks the run on an approval; the decision is the answer and the run finishes', async () => {
    const { engine, store } = await mcpEngine(new Registry().register(confirm), stateful.url, { tasks: {} });
    const started = await engine.runStart({ namespace: NS, workflowName: 'confirm-refund', input: { order: 'o-ask' }, execute: true });
    expect(started.run.status).toBe('SUSPENDED');
    const wait = started.waitingOn[0]!;
    expect(wait).toMatchObject({ kind: 'approval' });
    expect(wait.title).toContain('Refund order o-ask?');
    const task = log.of('confirm_refund').find((d) => d.args.order === 'o-ask')!;
    expect(log.of('confirm_refund.answer').filter((d) => d.taskId === task.taskId)).toHaveLength(0);
    await engine.approvalDecide({ namespace: NS, approvalId: wait.approvalId!, approve: true, by: 'ops', requestId: 'r-ask', payload: { confirm: true, note: 'checked by ops' } });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toMatchObject({ structuredContent: { order: 'o-ask', refunded: true, note: 'checked by ops', action: 'accept' } });
    expect(log.of('confirm_refund.answer').filter((d) => d.taskId === task.taskId).map((d) => d.args)).toEqual([{ action: 'accept', content: { confirm: true, note: 'checked by ops' } }]);
    expect(log.of('confirm_refund').filter((d) => d.args.order === 'o-ask')).toHaveLength(1);
    const entries = await store.journalList({ runId: started.run.id });
    expect(shape(entries).filter((s) => !s.includes('status'))).toEqual([
      'ok step mcp:tasks:tools/list', 'running tool tasks.confirm_refund', 'ok tool tasks.confirm_refund', 'ok step mcp:tasks:tasks/result',
      'suspended approval mcp-input:tasks.confirm_refund', 'resolved approval mcp-input:tasks.confirm_refund', 'ok step mcp:tasks:tasks/result',
    ]);
  });

  it('a model calling a task tool through ctx.agent reads the task\'s result, not its handle', async () => {
    const wf = defineWorkflow({ name: 'task-agent', input: z.object({ q: z.string() }) }, async (ctx, { q }) => {
      const r = await ctx.agent(q, { model: 'scripted:auto', tools: ['tasks.quick_refund'] });
      return { text: r.text, calls: r.toolCalls.map((c) => [c.toolName, c.outcome]) };
    });
    const { engine, store } = await mcpEngine(new Registry({ agent: createAgentRuntime({ env: {} }) }).register(wf), stateless.url, { tasks: {} });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'task-agent', input: { q: 'o-agent-task' }, execute: true });
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ calls: [['tasks.quick_refund', 'ok']] });
    expect((run.output as { text: string }).text).toContain('"refunded":"o-agent-task"');
    expect((run.output as { text: string }).text).not.toContain('mcpTask');
    const entries = await store.journalList({ runId: run.id });
    expect(entries.filter((e) => e.name === 'mcp:tasks:tasks/result' && e.status === 'ok')).toHaveLength(1);
    expect(log.of('quick_refund').filter((d) => d.args.order === 'o-agent-task')).toHaveLength(1);
  });

  it('the limit: another replica (another MCP session) cannot answer a session-bound task\'s question; the call fails with McpTaskLostError', async () => {
    const { engine, store, clock } = await mcpEngine(new Registry().register(confirm), stateful.url, { tasks: {} });
    const started = await engine.runStart({ namespace: NS, workflowName: 'confirm-refund', input: { order: 'o-moved' }, execute: true });
    expect(started.run.status).toBe('SUSPENDED');
    const other = new SdkMcpConnector({ store });
    const replica2 = new RunEngine({ store, registry: new Registry().register(confirm), holder: 'replica-2', leaseTtlMs: TTL, clock: clock.now, mcp: other });
    try {
      await replica2.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ops', requestId: 'r-moved', payload: { confirm: true } });
      const [done] = await replica2.runExecutePending();
      expect(done!.run!.status).toBe('FAILED');
      expect(done!.run!.error).toMatchObject({ name: 'McpTaskLostError' });
      expect(done!.run!.error!.message).toContain('keeps tasks per session and the run moved to another replica');
      expect(other.health(NS, 'tasks')).toMatchObject({ state: 'ok', consecutiveFailures: 0 }); // the server answered: not a transport failure
      const task = log.of('confirm_refund').find((d) => d.args.order === 'o-moved')!;
      expect(log.of('confirm_refund.answer').filter((d) => d.taskId === task.taskId)).toHaveLength(0);
    } finally {
      await other.close();
    }
  });

  it('a denied question declines: the server gets `decline` and the tool says so', async () => {
    const { engine } = await mcpEngine(new Registry().register(confirm), stateful.url, { tasks: {} });
    const started = await engine.runStart({ namespace: NS, workflowName: 'confirm-refund', input: { order: 'o-deny' }, execute: true });
    await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: false, by: 'ops', requestId: 'r-deny' });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.output).toMatchObject({ structuredContent: { order: 'o-deny', refunded: false, action: 'decline' } });
  });
});
