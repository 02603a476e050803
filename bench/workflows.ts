// The workflows module a `waymark server` loads for the gRPC benchmark (WAYMARK_WORKFLOWS).
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineTool, defineWorkflow } from '../src/index.js';

export const STEPS = 10;

export const tenSteps = defineWorkflow({ name: 'bench-ten-steps', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
  let total = 0;
  for (let i = 0; i < STEPS; i++) total += await ctx.step(`step-${i}`, () => n + i);
  return { total };
});

/** Event latency: each `tick` signal is answered by an emitted `tock`, which a follower on another replica times. */
export const ticks = defineWorkflow({ name: 'bench-ticks', input: z.object({ rounds: z.number() }) }, async (ctx, { rounds }) => {
  for (let i = 0; i < rounds; i++) {
    await ctx.signal('tick');
    await ctx.emit({ type: 'tock', i });
  }
  return { rounds };
});

/** Event latency after a decision: each approval decided is answered by an emitted `tock`, timed at a follower on another replica. */
export const approvals = defineWorkflow({ name: 'bench-approvals', input: z.object({ rounds: z.number() }) }, async (ctx, { rounds }) => {
  for (let i = 0; i < rounds; i++) {
    await ctx.approve({ title: 'next round' });
    await ctx.emit({ type: 'tock', i });
  }
  return { rounds };
});

/**
 * Recovery (bench/recovery.ts): a run that never ends on its own, one slow step (a ~20 ms tool
 * call) after another, each step's result naming the replica that executed it
 * (WAYMARK_BENCH_REPLICA, set per server process, else its pid). Cancelled when measured.
 */
export const CRAWL_STEP_MS = 20;
export const crawl = defineWorkflow({ name: 'bench-crawl', input: z.object({ steps: z.number() }) }, async (ctx, { steps }) => {
  for (let i = 0; i < steps; i++) {
    await ctx.step(`page-${i}`, async ({ signal }) => {
      await sleep(CRAWL_STEP_MS, undefined, { signal });
      return { replica: process.env.WAYMARK_BENCH_REPLICA ?? String(process.pid), i };
    });
  }
  return { steps };
});

/**
 * Remote tools (bench/remote-client.ts): one tool call per run, in process or served by a worker
 * over WorkerService (`bench_remote_echo`, declared by the bench's worker). The in-process tool is
 * mutating, so both journal an intent and a result.
 */
export const localEcho = defineTool({
  name: 'bench_local_echo', description: 'Returns its input (in process).', input: z.object({ n: z.number() }),
  execute: async ({ n }) => ({ n }),
});
export const localCall = defineWorkflow({ name: 'bench-local-call', input: z.object({ n: z.number() }) }, async (ctx, { n }) => ctx.tool(localEcho, { n }));
export const remoteCall = defineWorkflow({ name: 'bench-remote-call', input: z.object({ n: z.number() }) }, async (ctx, { n }) => ctx.tool('bench_remote_echo', { n }));

/** Parked runs (bench/parked.ts): a run that sleeps for hours, so it stays parked while the server is measured. */
export const park = defineWorkflow({ name: 'bench-park', input: z.object({ n: z.number() }) }, async (ctx) => {
  await ctx.sleep('2h');
  return 'woke';
});

/** Token streams (bench/tokens.ts): one model call whose deltas a client reads as they arrive. */
export const tokens = defineWorkflow({ name: 'bench-tokens', input: z.object({ prompt: z.string(), model: z.string() }) }, async (ctx, { prompt, model }) => {
  const answer = await ctx.agent(prompt, { model });
  return { text: answer.text };
});
