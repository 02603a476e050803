// MCP tool calls (issue 33): one `ctx.tool('bench.refund')` to a real MCP server over Streamable
// HTTP on loopback (the counting server of test/mcp, its own process, stateless) against the same
// mutating call to an in-process tool, each timed inside the workflow around the call (intent,
// request, result: two journal writes each), sequential and at concurrency 16; and the same call
// as an MCP task (docs/mcp.md "Tasks": the task server of test/mcp, stateless, whose `quick_refund`
// task completes at once: a tools/call that creates the task, then tasks/result; three journal
// writes). Each run pins the server's tool list first (its own `tools/list` step, not timed). Runs alone with
// `node --import tsx bench/mcp.ts`; `npm run bench` includes it as a row.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { z } from 'zod';
import { defineTool } from '../src/engine/author/tool.js';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import { Registry } from '../src/engine/registry.js';
import { RunEngine } from '../src/engine/run-engine.js';
import { SdkMcpConnector } from '../src/mcp/sdk-mcp-connector.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { runAlone } from './postgres.js';
import { fmt, percentile, pool } from './stats.js';

const SERVER = fileURLToPath(new URL('../test/mcp/fixtures/counting-mcp-server.mjs', import.meta.url));
const TASK_SERVER = fileURLToPath(new URL('../test/mcp/fixtures/task-mcp-server.mjs', import.meta.url));
const order = z.object({ order: z.string() });
const latencies: number[] = [];

const localRefund = defineTool({
  name: 'local_refund', description: 'Refunds an order, in process.', input: z.object({ order: z.string(), amount: z.number() }),
  execute: async ({ order: o, amount }) => ({ content: [{ type: 'text', text: JSON.stringify({ refunded: o, amount }) }] }),
});

/** One timed call to `tool` per run, after an untimed read that pins the MCP server (both workflows make it, for the same journal). */
function timedCall(name: string, tool: string, pin = 'bench.lookup') {
  return defineWorkflow({ name, input: order }, async (ctx, { order: o }) => {
    await ctx.tool(pin, { order: o });
    const started = performance.now();
    const result = await ctx.tool(tool, { order: o, amount: 1 });
    latencies.push(performance.now() - started);
    return result;
  });
}

const viaMcp = timedCall('bench-mcp-call', 'bench.refund');
const inProcess = timedCall('bench-local-call', 'local_refund');
const viaTask = timedCall('bench-mcp-task-call', 'tasks.quick_refund', 'tasks.lookup');

export interface McpRow { p50Ms: number; p99Ms: number; callsPerSec: number }

async function startServer(file: string): Promise<{ port: string; server: ReturnType<typeof spawn> }> {
  const server = spawn(process.execPath, [file, '--http'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = (await once(server.stdout!, 'data')) as [Buffer];
  const port = /listening (\d+)/.exec(chunk.toString())?.[1];
  if (!port) throw new Error(`the MCP bench server said ${chunk.toString()}`);
  return { port, server };
}

/** `runs` runs of each workflow at `concurrency`: the timed call's latency, MCP (plain and as a task) and in process. */
export async function measureMcp(url: string, runs: number, concurrency: number): Promise<{ mcp: McpRow; local: McpRow; task: McpRow }> {
  const [{ port, server }, tasks] = await Promise.all([startServer(SERVER), startServer(TASK_SERVER)]);
  const store = await PostgresStore.connect({ url, poolSize: 20, applicationName: 'waymark-bench-mcp' });
  await migrate({ pool: store.pool });
  const mcp = new SdkMcpConnector({ store });
  await store.mcpServerPut({ namespace: 'bench', name: 'bench', transport: { kind: 'http', url: `http://127.0.0.1:${port}/mcp`, headers: {} }, tools: {} });
  await store.mcpServerPut({ namespace: 'bench', name: 'tasks', transport: { kind: 'http', url: `http://127.0.0.1:${tasks.port}/mcp`, headers: {} }, tools: {} });
  const engine = new RunEngine({
    store, registry: new Registry().register(viaMcp, inProcess, viaTask, localRefund), holder: `bench-mcp:${process.pid}`, leaseTtlMs: 30_000, logger: pino({ level: 'warn' }), mcp,
  });
  const measure = async (workflowName: string): Promise<McpRow> => {
    latencies.length = 0;
    const started = performance.now();
    await pool(runs, concurrency, async (i) => {
      const { execution } = await engine.runStart({ namespace: 'bench', workflowName, input: { order: `${workflowName}-${concurrency}-${i}` }, execute: true });
      if (execution?.outcome !== 'succeeded') throw new Error(`bench run ended ${execution?.outcome}: ${String(execution?.error)}`);
    });
    const seconds = (performance.now() - started) / 1000;
    return { p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), callsPerSec: runs / seconds };
  };
  try {
    await measure(viaMcp.name); // warm-up: the connection, the JIT
    await measure(viaTask.name);
    return { mcp: await measure(viaMcp.name), local: await measure(inProcess.name), task: await measure(viaTask.name) };
  } finally {
    await mcp.close();
    await store.close();
    for (const s of [server, tasks.server]) {
      s.kill('SIGTERM');
      await once(s, 'exit');
    }
  }
}

/** The rows `npm run bench` prints. */
export function mcpRows(seq: { mcp: McpRow; local: McpRow; task: McpRow }, c16: { mcp: McpRow; local: McpRow; task: McpRow }): string[][] {
  const row = (label: string, r: McpRow) => [label, `${fmt(r.callsPerSec, 0)} runs/s`, fmt(r.p50Ms, 3), fmt(r.p99Ms, 3)];
  return [
    row('MCP tool call (Streamable HTTP, loopback), sequential', seq.mcp),
    row('same call to an in-process tool, sequential', seq.local),
    row('same call as an MCP task (handle, then tasks/result), sequential', seq.task),
    row('MCP tool call (Streamable HTTP, loopback), concurrency 16', c16.mcp),
    row('same call to an in-process tool, concurrency 16', c16.local),
    row('same call as an MCP task (handle, then tasks/result), concurrency 16', c16.task),
  ];
}

await runAlone(import.meta.url, async (db) => {
  const runs = Number(process.env.BENCH_MCP_RUNS ?? 200);
  const seq = await measureMcp(await db.create('bench_mcp_seq'), runs, 1);
  const c16 = await measureMcp(await db.create('bench_mcp_c16'), runs, 16);
  for (const r of mcpRows(seq, c16)) console.log(r.join(' | '));
  console.log(`added p50 ms over in process: sequential ${fmt(seq.mcp.p50Ms - seq.local.p50Ms, 3)}, concurrency 16 ${fmt(c16.mcp.p50Ms - c16.local.p50Ms, 3)}`);
  console.log(`added p50 ms by a task over a plain MCP call: sequential ${fmt(seq.task.p50Ms - seq.mcp.p50Ms, 3)}, concurrency 16 ${fmt(c16.task.p50Ms - c16.mcp.p50Ms, 3)}`);
});
