// Workflows the client tests (test/clients/clients.test.ts, clients/ts/test/live.test.ts) run on a
// real `waymark server --workflows test/clients/workflows.ts`: the refund example as `waymark dev`
// registers it, and a probe for drift.
import { z } from 'zod';
import { defineWorkflow } from 'waymark';

export { chargeBack, refund } from '../../examples/refund.js';

/**
 * Parks on an approval under a strict drift policy. Its version comes from the environment, so the
 * harness restarts the server with another WAYMARK_TEST_DRIFT_VERSION to make parked runs drift.
 */
export const driftProbe = defineWorkflow(
  { name: 'drift_probe', version: process.env.WAYMARK_TEST_DRIFT_VERSION ?? '1', drift: 'strict', input: z.object({}) },
  async (ctx) => {
    await ctx.approve({ title: 'Continue?' });
    return { done: true };
  },
);
