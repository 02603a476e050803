// Workflows the client tests (test/clients/clients.test.ts, clients/ts/test/live.test.ts) run on a
// real `waymark server --workflows test/clients/workflows.ts`: the refund example as `waymark dev`
// registers it, a probe for drift, and refund_as_code: the refund flow of the clients' READMEs
// (clients/go/examples/refund-flow) written as code, whose journal test/clients/flow-clients.test.ts
// compares with the flow's; remote_probe calls a remote tool the Go and Python worker SDKs' live
// tests serve (clients/go/worker/live_test.go, clients/python/tests/test_worker.py); nap_then_approve
// parks on a short timer (internal) before its approval, for the start-and-wait helpers' wait_for;
// scheduled_echo answers its input at once, for the Go and Python clients' live schedule tests.
import { z } from 'zod';
import { defineWorkflow } from 'waymark';
import { chargeBack } from '../../examples/refund.js';

export { chargeBack, refund } from '../../examples/refund.js';

/** The refund flow as a code workflow: the same effects, named as the flow's nodes name them. */
export const refundAsCode = defineWorkflow(
  { name: 'refund_as_code', input: z.object({ order: z.string().min(1), amount: z.number().positive() }) },
  async (ctx, { order, amount }) => {
    const decision = await ctx.approve({ name: 'approve', title: `Refund $${amount} for order ${order}?`, deadline: '24h', onTimeout: 'deny' });
    if (!decision.approved) return { status: 'declined', by: decision.by };
    const { refundId } = await ctx.tool(chargeBack, { order, amount });
    return { status: 'refunded', refundId };
  },
);

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

/**
 * Calls the remote tool named in its input and reports how the call ended: `{ ok: result }`, or
 * the error's reason, name and message (EFFECT_FAILED for a non-retryable failure,
 * RETRIES_EXHAUSTED with `attempts` once the tool's attempts are spent).
 */
export const remoteProbe = defineWorkflow(
  { name: 'remote_probe', input: z.object({ tool: z.string().min(1), args: z.record(z.string(), z.unknown()) }) },
  async (ctx, { tool, args }) => {
    try {
      return { ok: (await ctx.tool(tool, args)) as Record<string, unknown> };
    } catch (err) {
      const e = err as { reason?: string; errorName?: string; errorMessage?: string; attempts?: number };
      return { failed: e.reason ?? 'unknown', errorName: e.errorName ?? null, errorMessage: e.errorMessage ?? null, attempts: e.attempts ?? null };
    }
  },
);

/** A timer the run wakes from by itself, then an approval: where StartRun's OUTSIDE_INPUT wait answers (issue 30). */
export const napThenApprove = defineWorkflow(
  { name: 'nap_then_approve', input: z.object({}) },
  async (ctx) => {
    await ctx.sleep('200ms');
    const decision = await ctx.approve({ title: 'Go on after the nap?' });
    return { approved: decision.approved };
  },
);

/** Answers its note at once: what the Go and Python clients' live schedule tests start from a schedule (issue 36). */
export const scheduledEcho = defineWorkflow(
  { name: 'scheduled_echo', input: z.object({ note: z.string() }) },
  async (_ctx, { note }) => ({ echoed: note }),
);
