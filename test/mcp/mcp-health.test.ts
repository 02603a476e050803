import { createClient } from '@connectrpc/connect';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/index.js';
import { Registry } from '../../src/engine/registry.js';
import { McpService } from '../../src/gen/waymark/v1/mcp_service_pb.js';
import { SdkMcpConnector } from '../../src/mcp/sdk-mcp-connector.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { NS } from '../engine/harness.js';
import { apiHarness } from '../server/api-harness.js';
import { deliveriesLog, mcpEngine, startHttpMcpServer } from './mcp-fixture.js';

/*
 * Connections that survive a server going away (docs/mcp.md "Connections and health"): the
 * counting MCP server (fixtures/counting-mcp-server.mjs, Streamable HTTP, its own process) is
 * stopped under a run and started again on the same port. The run waits in its retry backoff
 * with a waiting reason naming the unreachable server; the replica's health view records the
 * failures and its reconnect backoff, and the first attempt after the server is back reconnects.
 */

const log = deliveriesLog();
const stops: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const stop of stops) await stop();
  log.remove();
});

describe('an MCP server that goes away and comes back', () => {
  it('the run waits with the reason, health shows the failures and the backoff, and the next attempt reconnects', async () => {
    const first = await startHttpMcpServer(log.file);
    const port = new URL(first.url).port;
    await first.stop();
    const wf = defineWorkflow({ name: 'lookup-when-back', input: z.object({ order: z.string() }) }, async (ctx, { order }) =>
      ctx.tool('shop.lookup', { order }, { retry: { maxAttempts: 10, initialInterval: 1_000 } }));
    const { engine, mcp, clock } = await mcpEngine(new Registry().register(wf), first.url, { shop: {} }, {
      replica: 'replica-1', health: { now: () => clock.now().getTime() },
    });
    stops.push(() => mcp.close());
    expect(mcp.health(NS, 'shop')).toBeNull();

    const { run } = await engine.runStart({ namespace: NS, workflowName: 'lookup-when-back', input: { order: 'o-back' }, execute: true });
    expect(run.status).toBe('SUSPENDED');
    // The pin's tools/list could not reach the server: the run waits in its backoff, and says why.
    let waits = await engine.runWaits({ runId: run.id, namespace: NS });
    expect(waits).toHaveLength(1);
    expect(waits[0]!.name).toBe('mcp:shop:tools/list');
    expect(waits[0]!.backoff!.detail).toMatch(/^MCP server "shop" is unreachable from replica replica-1 \(1 failed connection, never answered; last error: .*ECONNREFUSED/);
    const down = mcp.health(NS, 'shop')!;
    expect(down).toMatchObject({ state: 'unreachable', consecutiveFailures: 1, lastSuccessAt: null, replica: 'replica-1' });
    expect(down.nextAttemptAt!.getTime() - down.lastErrorAt!.getTime()).toBe(500);

    // Still down at the next attempt: the reconnect backoff doubles.
    clock.advance(120_000);
    expect((await engine.suspensionsResolveDue({ limit: 10 })).resolved).toHaveLength(1);
    await engine.runExecutePending();
    const still = mcp.health(NS, 'shop')!;
    expect(still.consecutiveFailures).toBe(2);
    expect(still.nextAttemptAt!.getTime() - still.lastErrorAt!.getTime()).toBe(1_000);
    waits = await engine.runWaits({ runId: run.id, namespace: NS });
    expect(waits[0]!.backoff!.detail).toContain('(2 failed connections, never answered;');

    // Back on the same port: the next attempt reconnects, pins and calls.
    const back = await startHttpMcpServer(log.file, { MCP_PORT: port });
    stops.push(() => back.stop());
    clock.advance(120_000);
    await engine.suspensionsResolveDue({ limit: 10 });
    const [done] = await engine.runExecutePending();
    expect(done!.run!.status).toBe('SUCCEEDED');
    expect(done!.run!.output).toMatchObject({ content: [{ text: 'order o-back is paid' }] });
    expect(mcp.health(NS, 'shop')).toMatchObject({ state: 'ok', consecutiveFailures: 0, nextAttemptAt: null, lastSuccessAt: clock.now() });
    expect(mcp.health(NS, 'shop')!.lastError).toContain('ECONNREFUSED');
    expect(log.of('lookup').filter((d) => d.args.order === 'o-back')).toHaveLength(1);
  });

  it('a call inside the reconnect backoff waits for it instead of failing at once', async () => {
    let now = 1_000_000;
    const slept: number[] = [];
    const store = new MemoryStore();
    await store.mcpServerPut({ namespace: NS, name: 'gone', transport: { kind: 'http', url: 'http://127.0.0.1:9/mcp', headers: {} }, tools: {} });
    const server = (await store.mcpServerGet({ namespace: NS, name: 'gone' }))!;
    const mcp = new SdkMcpConnector({ store, health: { now: () => now, sleep: async (ms) => { slept.push(ms); now += ms; } } });
    stops.push(() => mcp.close());
    const signal = new AbortController().signal;
    await expect(mcp.listTools(server, signal)).rejects.toThrow();
    await expect(mcp.listTools(server, signal)).rejects.toThrow();
    now += 200;
    await expect(mcp.listTools(server, signal)).rejects.toThrow();
    expect(slept).toEqual([500, 800]);
    expect(mcp.health(NS, 'gone')!.consecutiveFailures).toBe(3);
  });

  it('ListMcpServers carries the answering replica\'s health of each server', async () => {
    const store = new MemoryStore();
    const mcp = new SdkMcpConnector({ store, replica: 'replica-a' });
    stops.push(() => mcp.close());
    const h = apiHarness({ store, mcp });
    const client = createClient(McpService, h.transport);
    await client.putMcpServer({ server: { name: 'gone', transport: { case: 'http', value: { url: 'http://127.0.0.1:9/mcp', headers: {} } } } });
    await client.putMcpServer({ server: { name: 'idle', transport: { case: 'http', value: { url: 'http://127.0.0.1:9/mcp', headers: {} } } } });
    await expect(mcp.listTools((await store.mcpServerGet({ namespace: 'default', name: 'gone' }))!, new AbortController().signal)).rejects.toThrow();
    const { servers } = await client.listMcpServers({});
    const gone = servers.find((s) => s.name === 'gone')!.health!;
    expect(gone).toMatchObject({ state: 'unreachable', consecutiveFailures: 1, replica: 'replica-a' });
    expect(gone.lastError).toContain('fetch failed'); // port 9: fetch refuses it ("bad port")
    expect(gone.lastSuccessTime).toBeUndefined();
    expect(timestampDate(gone.nextAttemptTime!).getTime()).toBeGreaterThan(timestampDate(gone.lastErrorTime!).getTime());
    expect(servers.find((s) => s.name === 'idle')!.health).toBeUndefined();
  });
});
