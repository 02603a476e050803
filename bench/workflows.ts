// The workflows module a `waymark server` loads for the gRPC benchmark (WAYMARK_WORKFLOWS).
import { z } from 'zod';
import { defineWorkflow } from '../src/index.js';

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
