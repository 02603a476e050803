// The workflow the webhook tests run on a real `waymark server --workflows test/webhooks/workflows.ts`.
import { z } from 'zod';
import { defineWorkflow } from 'waymark';

/** Finishes at once with its input: each run is one run.finished. */
export const finish = defineWorkflow(
  { name: 'finish', input: z.object({ n: z.number() }) },
  async (_ctx, input) => ({ finished: input.n }),
);

/** Parks on an approval, then finishes with the decision: one approval.pending, then one run.finished. */
export const gated = defineWorkflow(
  { name: 'gated', input: z.object({ n: z.number() }) },
  async (ctx, input) => {
    const decision = await ctx.approve({ title: `Release batch ${input.n}?`, description: 'the e2e gate', deadline: '1h' });
    return { n: input.n, approved: decision.approved };
  },
);
