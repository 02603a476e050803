// The workflows test/clients/remote-refund.test.ts runs on a real `waymark server`: the refund
// example with `charge_back` as a remote tool, served by the Go or Python worker example
// (clients/go/examples/worker, clients/python/examples/worker.py). No in-process charge_back is
// registered here, so ctx.tool('charge_back', ...) goes to a worker.
import { z } from 'zod';
import { defineWorkflow } from 'waymark';

export const refundRemote = defineWorkflow(
  {
    name: 'refund_remote',
    description: 'The refund example, its charge_back served by a worker.',
    input: z.object({ order: z.string().min(1), amount: z.number().positive() }),
  },
  async (ctx, { order, amount }) => {
    const decision = await ctx.approve({ title: `Refund $${amount} for order ${order}?`, deadline: '24h', onTimeout: 'deny' });
    if (!decision.approved) return { status: 'declined', by: decision.by, timedOut: decision.timedOut };
    const { refundId } = (await ctx.tool('charge_back', { order, amount })) as { refundId: string };
    await ctx.emit({ type: 'refunded', order, refundId });
    return { status: 'refunded', refundId };
  },
);

// An agent whose model (the built-in offline `scripted:auto`, which calls each offered tool once
// with arguments made from its declared JSON Schema: `order` gets the prompt, `amount` 1) calls
// the remote charge_back. The test's worker declares it `ask`, so the call parks on an approval first.
export const refundAgentRemote = defineWorkflow(
  {
    name: 'refund_agent_remote',
    description: 'An agent that refunds an order with the remote charge_back.',
    input: z.object({ order: z.string().min(1) }),
  },
  async (ctx, { order }) => {
    const result = await ctx.agent(order, { model: 'scripted:auto', tools: ['charge_back'] });
    return { text: result.text, calls: result.toolCalls.map((c) => c.toolName) };
  },
);
