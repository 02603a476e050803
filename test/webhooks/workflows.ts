// The workflow the webhook tests run on a real `waymark server --workflows test/webhooks/workflows.ts`.
import { z } from 'zod';
import { defineWorkflow } from 'waymark';

/** Finishes at once with its input: each run is one run.finished. */
export const finish = defineWorkflow(
  { name: 'finish', input: z.object({ n: z.number() }) },
  async (_ctx, input) => ({ finished: input.n }),
);
