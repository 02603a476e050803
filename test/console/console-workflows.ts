// Workflows the web console's browser tests (test/console/*.test.ts) run on a real
// `waymark dev --workflows test/console/console-workflows.ts`: the README's refund (parks on an
// approval), and runs that fill each of the console's views: signals one at a time (the live
// stream across a restart), parallel branches with a retried step and a child (the timeline and
// the run tree), and a long journal (the 10,000-entry bench row).
import { z } from 'zod';
import { defineWorkflow } from 'waymark';

export { chargeBack, refund } from '../../examples/refund.js';

/** Waits for `ticks` signals named "tick", one step after each, then finishes. */
export const feed = defineWorkflow(
  { name: 'feed', input: z.object({ ticks: z.number().int().min(1).max(50) }) },
  async (ctx, { ticks }) => {
    let sum = 0;
    for (let i = 0; i < ticks; i++) {
      const { n } = await ctx.signal('tick', { schema: z.object({ n: z.number() }) });
      sum += await ctx.step(`add-${i}`, () => n);
    }
    return { sum };
  },
);

/** A leaf child: one step. */
export const leaf = defineWorkflow(
  { name: 'leaf', input: z.object({ label: z.string() }) },
  async (ctx, { label }) => ctx.step('work', () => ({ label, done: true })),
);

const failedOnce = new Set<string>();

/** Three parallel branches (one retries a step once), then a child run: the timeline's shapes. */
export const fanout = defineWorkflow(
  { name: 'fanout', input: z.object({ order: z.string() }) },
  async (ctx, { order }) => {
    const results = await ctx.parallel([
      (b) => b.step('fetch-order', () => ({ order, items: 3 })),
      (b) => b.step('check-fraud', ({ idempotencyKey }) => {
        // The first attempt of each call fails (the body runs again on every replay; the key does not change).
        if (!failedOnce.has(idempotencyKey)) {
          failedOnce.add(idempotencyKey);
          throw new Error('fraud service timed out');
        }
        return { score: 0.02 };
      }, { retry: { maxAttempts: 3, initialInterval: '200ms' } }),
      async (b) => {
        await b.sleep('300ms');
        return b.step('reserve-stock', () => ({ reserved: true }));
      },
    ]);
    const child = await ctx.child(leaf, { label: order });
    return { results, child };
  },
);

/**
 * A journal of about `entries` entries (one per step), for the run page's paging
 * (console-paging.test.ts); with `park`, it then waits for a "go" signal, so its page is live.
 */
export const long = defineWorkflow(
  { name: 'long', input: z.object({ entries: z.number().int().min(1).max(20_000), park: z.boolean().default(false) }) },
  async (ctx, { entries, park }) => {
    const batch = 200;
    for (let i = 0; i < entries; i += batch) {
      await Promise.all(Array.from({ length: Math.min(batch, entries - i) }, (_, j) => ctx.step(`s${i + j}`, () => i + j)));
    }
    if (park) await ctx.signal('go', { schema: z.object({}) });
    return { entries };
  },
);
