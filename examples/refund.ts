import { z } from 'zod';
import { defineTool, defineWorkflow } from 'waymark';

/*
 * DESIGN.md's refund: a person approves (or the 24h deadline denies), then the money goes back
 * exactly once. `waymark dev` registers it; try it with docs/api.md.
 *
 * `charge_back` stands in for a payment provider. When WAYMARK_EXAMPLE_SINK_URL is set it POSTs
 * each refund there with the effect's idempotency key in the Idempotency-Key header, as a real
 * provider integration would, so a test can count executions outside the server process.
 */

export const chargeBack = defineTool({
  name: 'charge_back',
  description: 'Refunds an order through the payment provider (a stand-in that reports to WAYMARK_EXAMPLE_SINK_URL when set).',
  input: z.object({ order: z.string().min(1), amount: z.number().positive() }),
  // Mutating (the default): the intent is journaled before execute, so a crash redispatches it
  // with the same idempotency key, and a dry run skips it.
  async execute({ order, amount }, { idempotencyKey, signal }) {
    const sink = process.env.WAYMARK_EXAMPLE_SINK_URL;
    if (sink) {
      const res = await fetch(sink, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'Idempotency-Key': idempotencyKey },
        body: JSON.stringify({ order, amount }),
        signal,
      });
      if (!res.ok) throw new Error(`the payment provider answered ${res.status}`);
    }
    // A provider derives the refund from the key, so a redispatch returns the same refund.
    return { refundId: `rf_${idempotencyKey.slice(-16)}`, order, amount };
  },
});

export const refund = defineWorkflow(
  {
    name: 'refund',
    description: 'Refunds an order after a person approves it; denied automatically after 24 hours.',
    input: z.object({ order: z.string().min(1), amount: z.number().positive() }),
  },
  async (ctx, { order, amount }) => {
    const decision = await ctx.approve({ title: `Refund $${amount} for order ${order}?`, deadline: '24h', onTimeout: 'deny' });
    if (!decision.approved) return { status: 'declined', by: decision.by, timedOut: decision.timedOut };
    const { refundId } = await ctx.tool(chargeBack, { order, amount });
    await ctx.emit({ type: 'refunded', order, refundId });
    return { status: 'refunded', refundId };
  },
);
