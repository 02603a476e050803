import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { Registry } from '../../src/engine/registry.js';
import type { Workflow } from '../../src/engine/author/workflow.js';
import type { JournalStore } from '../../src/store/store.js';
import { NS } from '../engine/harness.js';
import { closeMcpEngines, deliveriesLog, mcpEngine, startHttpMcpServer } from './mcp-fixture.js';

/*
 * A parked run whose pinned MCP tool changed on the server (docs/mcp.md "Drift"). The counting
 * server runs twice as subprocesses: as it was, and MCP_VARIANT=drifted (refund takes one more
 * argument, reject is gone). While a run waits on an approval, its server's registration is pointed
 * at the drifted one; the resumed run's call is refused with McpToolDriftError before anything is
 * sent, and the recoveries take it on: re-pinning (invalidate the pin), restart, or the code's own catch.
 */

const log = deliveriesLog();
let before: Awaited<ReturnType<typeof startHttpMcpServer>>;
let after: Awaited<ReturnType<typeof startHttpMcpServer>>;

beforeAll(async () => {
  [before, after] = await Promise.all([startHttpMcpServer(log.file), startHttpMcpServer(log.file, { MCP_VARIANT: 'drifted' })]);
});
afterAll(async () => {
  await closeMcpEngines();
  await Promise.all([before.stop(), after.stop()]);
  log.remove();
});

const order = z.object({ order: z.string() });

/** Looks the order up (pinning the server), waits for an approval, then calls `tool`. */
function parkedThenCalls(name: string, call: (ctx: Parameters<Parameters<typeof defineWorkflow>[1]>[0], order: string) => Promise<unknown>): Workflow {
  return defineWorkflow({ name, input: order }, async (ctx, { order: id }) => {
    await ctx.tool('shop.lookup', { order: id });
    await ctx.approve({ title: 'go on?' });
    return call(ctx, id);
  });
}

async function parkAndDrift(workflow: Workflow, orderId: string) {
  const made = await mcpEngine(new Registry().register(workflow), before.url, { shop: {} });
  const { engine, store } = made;
  const started = await engine.runStart({ namespace: NS, workflowName: workflow.name, input: { order: orderId }, execute: true });
  expect(started.run.status).toBe('SUSPENDED');
  // The server changes while the run waits.
  await store.mcpServerPut({ namespace: NS, name: 'shop', transport: { kind: 'http', url: after.url, headers: {} }, tools: {} });
  await engine.approvalDecide({ namespace: NS, approvalId: started.waitingOn[0]!.approvalId!, approve: true, by: 'ann', requestId: 'r1' });
  const [done] = await engine.runExecutePending();
  return { engine, store, run: done!.run!, pinSeq: await pinSeqOf(store, started.run.id) };
}

async function pinSeqOf(store: JournalStore, runId: string): Promise<number> {
  return (await store.journalList({ runId })).find((e) => e.name === 'mcp:shop:tools/list' && e.status === 'ok')!.seq;
}

describe('a pinned MCP tool that drifted', () => {
  it('a changed schema fails the call with McpToolDriftError, nothing sent; resuming with the pin invalidated re-pins and calls it', async () => {
    const wf = parkedThenCalls('drift-repin', (ctx, id) => ctx.tool('shop.refund', { order: id, amount: 3 }));
    const { engine, store, run, pinSeq } = await parkAndDrift(wf, 'o-drift-1');
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({ name: 'McpToolDriftError' });
    expect(run.error!.message).toContain('MCP tool "shop.refund" drifted');
    expect(run.error!.message).toContain('lists it with another input schema; nothing was sent');
    expect(run.error!.message).toContain(`invalidate ${pinSeq}`);
    expect(log.of('refund').filter((d) => d.args.order === 'o-drift-1')).toHaveLength(0);

    const resumed = await engine.runResume({ runId: run.id, namespace: NS, invalidate: [pinSeq] });
    expect(resumed.run.status).toBe('SUCCEEDED');
    expect(resumed.run.output).toMatchObject({ structuredContent: { refunded: 'o-drift-1', amount: 3 } });
    expect(log.of('refund').filter((d) => d.args.order === 'o-drift-1')).toHaveLength(1);
    // The new pin holds the drifted schema (refund's optional `note`).
    const pins = (await store.journalList({ runId: run.id })).filter((e) => e.name === 'mcp:shop:tools/list' && e.status === 'ok');
    expect(pins).toHaveLength(2);
    const refund = (pins[1]!.payload as { tools: { name: string; inputSchema: { properties: object } }[] }).tools.find((t) => t.name === 'refund')!;
    expect(Object.keys(refund.inputSchema.properties)).toContain('note');
  });

  it('drift recovery `restart` starts a new run on the server\'s current tools', async () => {
    const wf = parkedThenCalls('drift-restart', (ctx, id) => ctx.tool('shop.refund', { order: id, amount: 4 }));
    const { engine, run } = await parkAndDrift(wf, 'o-drift-2');
    expect(run.error).toMatchObject({ name: 'McpToolDriftError' });
    const { restartedAs } = await engine.runResume({ runId: run.id, namespace: NS, drift: 'restart' });
    expect(restartedAs).not.toBeNull();
    expect(restartedAs!.labels['waymark.restarted_from']).toBe(run.id);
    expect(log.of('refund').filter((d) => d.args.order === 'o-drift-2')).toHaveLength(0); // the new run waits on its own approval
  });

  it('a vanished tool is McpToolDriftError too, and the code may catch it', async () => {
    const wf = parkedThenCalls('drift-vanished', (ctx, id) => ctx.tool('shop.reject', { order: id }).catch((e: { errorName?: string; message: string }) => ({ caught: e.errorName, message: e.message })));
    const { run } = await parkAndDrift(wf, 'o-drift-3');
    expect(run.status).toBe('SUCCEEDED');
    expect(run.output).toMatchObject({ caught: 'McpToolDriftError' });
    expect((run.output as { message: string }).message).toContain('server "shop" no longer lists it');
    expect(log.of('reject').filter((d) => d.args.order === 'o-drift-3')).toHaveLength(0);
  });
});
