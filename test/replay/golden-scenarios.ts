import { z } from 'zod';
import { defineTool, defineWorkflow, type Workflow } from '../../src/index.js';
import type { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import type { FakeClock } from '../engine/harness.js';

/*
 * The workflows whose journals are recorded as golden files (record-golden.ts) and replayed in
 * strict mode by golden.test.ts. Editing a body here is exactly what the golden test is for: the
 * recorded journals must still replay with zero live calls, or the change is a breaking one.
 */

/** Counts executions outside the engine: a strict replay must leave it untouched. */
export const executions: string[] = [];

export const reserveStock = defineTool({
  name: 'reserve_stock', description: 'Reserves items (mutating).', input: z.object({ sku: z.string(), qty: z.number().int() }),
  execute: ({ sku, qty }, { idempotencyKey }) => { executions.push(`reserve_stock ${idempotencyKey}`); return { reservation: `${sku}x${qty}` }; },
});

export const priceLookup = defineTool({
  name: 'price_lookup', description: 'Reads a price (read-only).', input: z.object({ sku: z.string() }), mutating: false,
  execute: ({ sku }) => { executions.push(`price_lookup ${sku}`); return { sku, cents: sku.length * 100 }; },
});

export const chargeCard = defineTool({
  name: 'charge_card', description: 'Charges a card; a person must allow it.', input: z.object({ cents: z.number() }), policy: 'ask',
  execute: ({ cents }, { idempotencyKey }) => { executions.push(`charge_card ${idempotencyKey}`); return { charged: cents }; },
});

const step = <T>(name: string, value: T) => () => { executions.push(`step ${name}`); return value; };

export const checkout = defineWorkflow({ name: 'checkout', input: z.object({ sku: z.string(), qty: z.number() }) }, async (ctx, { sku, qty }) => {
  const orderId = await ctx.uuid();
  const at = await ctx.now();
  const price = await ctx.tool(priceLookup, { sku });
  const reservation = await ctx.tool(reserveStock, { sku, qty });
  await ctx.emit({ type: 'reserved', sku });
  const total = await ctx.step('total', step('total', price.cents * qty));
  return { orderId: orderId.length, at: at.getTime() > 0, reservation: reservation.reservation, total };
});

export const refund = defineWorkflow({ name: 'refund', input: z.object({ amount: z.number() }) }, async (ctx, { amount }) => {
  const decision = await ctx.approve({ title: `Refund $${amount}?`, deadline: '24h', onTimeout: 'deny' });
  if (!decision.approved) return { status: 'declined', timedOut: decision.timedOut };
  const done = await ctx.step('refund', step('refund', { refunded: amount }));
  return { status: 'refunded', by: decision.by, ...done };
});

export const fanout = defineWorkflow({ name: 'fanout', input: z.object({ items: z.array(z.string()) }) }, async (ctx, { items }) => {
  const priced = await ctx.parallel(items.map((sku) => async (b) => {
    const p = await b.tool(priceLookup, { sku });
    const [x, y] = await b.parallel([async (c) => c.step('inner', step('inner', `${sku}-x`)), async (c) => c.step('inner', step('inner', `${sku}-y`))]);
    return { sku, cents: p.cents, x, y };
  }));
  const [first, second] = await Promise.all([ctx.step('same', step('same', 1)), ctx.step('same', step('same', 2))]);
  return { priced, first, second };
});

export const restock = defineWorkflow({ name: 'restock', input: z.object({}) }, async (ctx) => {
  const { qty } = await ctx.signal('restock', { schema: z.object({ qty: z.number().int().positive() }) });
  const r = await ctx.tool(reserveStock, { sku: 'widget', qty });
  return { qty, ...r };
});

export const resilient = defineWorkflow({ name: 'resilient', input: z.object({}) }, async (ctx) => {
  let fallback = false;
  try {
    await ctx.step('flaky', () => { executions.push('step flaky'); throw new Error('upstream 503'); });
  } catch {
    fallback = true;
  }
  const after = await ctx.step('after', step('after', 'recovered'));
  return { fallback, after };
});

export const brittle = defineWorkflow({ name: 'brittle', input: z.object({}) }, async (ctx) => {
  await ctx.step('prepare', step('prepare', 1));
  return ctx.step('explode', () => { executions.push('step explode'); throw new Error('the run dies here'); });
});

export const payout = defineWorkflow({ name: 'payout', input: z.object({ cents: z.number() }) }, async (ctx, { cents }) => ctx.tool(chargeCard, { cents }));

export const leaf = defineWorkflow({ name: 'leaf', input: z.object({ n: z.number() }) }, async (ctx, { n }) => ctx.step('square', step('square', n * n)));

export const tree = defineWorkflow({ name: 'tree', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
  const [a, b] = await Promise.all([ctx.child(leaf, { n }), ctx.child(leaf, { n: n + 1 })]);
  return { a, b };
});

export const sleeper = defineWorkflow({ name: 'sleeper', input: z.object({}) }, async (ctx) => {
  const before = await ctx.step('before', step('before', 'b'));
  await ctx.sleep('1h');
  return { before, after: await ctx.step('after', step('after', 'a')) };
});

/** Fails the first two attempts of each call (counted by idempotency key), then charges. */
const flakyAttempts = new Map<string, number>();
export const flakyCharge = defineTool({
  name: 'flaky_charge', description: 'Charges; the provider answers 503 twice first (mutating).', input: z.object({ cents: z.number() }),
  retry: { maxAttempts: 3, initialInterval: '1s' },
  execute: ({ cents }, { idempotencyKey }) => {
    executions.push(`flaky_charge ${idempotencyKey}`);
    const n = (flakyAttempts.get(idempotencyKey) ?? 0) + 1;
    flakyAttempts.set(idempotencyKey, n);
    if (n < 3) throw new Error(`provider answered 503 (attempt ${n})`);
    return { charged: cents };
  },
});

export const retrier = defineWorkflow({ name: 'retrier', input: z.object({ cents: z.number() }) }, async (ctx, { cents }) => {
  const charged = await ctx.tool(flakyCharge, { cents });
  return { ...charged, done: await ctx.step('after', step('after', true)) };
});

/** Its first attempt never returns (timed out at 20 ms); the second answers. */
const timeboxedAttempts = new Map<string, number>();
export const timeboxed = defineWorkflow({ name: 'timeboxed', input: z.object({}) }, async (ctx) =>
  ctx.step('lookup', ({ idempotencyKey }) => {
    executions.push('step lookup');
    const n = (timeboxedAttempts.get(idempotencyKey) ?? 0) + 1;
    timeboxedAttempts.set(idempotencyKey, n);
    return n === 1 ? new Promise<never>(() => {}) : { found: n };
  }, { timeout: '20ms', retry: { maxAttempts: 2, initialInterval: '1s' } }));

/** Fires due backoff timers and executes what they woke until none is left. */
async function fireTimers({ engine, clock }: { engine: RunEngine; clock: FakeClock }): Promise<void> {
  for (let i = 0; i < 10; i++) {
    clock.advance(120_000);
    if ((await engine.suspensionsResolveDue({ limit: 10 })).resolved.length === 0) return;
    await engine.runExecutePending();
  }
}

export function goldenRegistry(extra: Workflow[] = []): Registry {
  return new Registry().register(
    checkout, refund, fanout, restock, resilient, brittle, payout, leaf, tree, sleeper, retrier, timeboxed, reserveStock, priceLookup, chargeCard, flakyCharge, ...extra,
  );
}

export interface Scenario {
  file: string;
  description: string;
  workflow: string;
  input: unknown;
  /** Drives the run after it first parks or ends. */
  drive?: (p: { engine: RunEngine; clock: FakeClock; runId: string }) => Promise<void>;
  /** Fenced writes at which the recording worker crashes (SimulatedCrash) and a new one recovers. */
  crashAt?: number[];
  /** Invalidate these entries (by kind/name) with a resume after the run ended. */
  invalidate?: { kind: string; name: string }[];
}

async function approveFirst(engine: RunEngine, runId: string, approve: boolean): Promise<void> {
  const [waiting] = await engine.runWaits({ runId, namespace: 'golden' });
  await engine.approvalDecide({ namespace: 'golden', approvalId: waiting!.approvalId!, approve, by: 'reviewer@example.com', requestId: `req-${runId}`, comment: approve ? 'ok' : 'no' });
  await engine.runExecutePending();
}

export const scenarios: Scenario[] = [
  { file: 'checkout', description: 'uuid, now, a read-only tool, a mutating tool, an event and a step', workflow: 'checkout', input: { sku: 'widget', qty: 3 } },
  { file: 'refund-approved', description: 'an approval decided by a person, then a step', workflow: 'refund', input: { amount: 40 }, drive: ({ engine, runId }) => approveFirst(engine, runId, true) },
  {
    file: 'refund-timeout', description: 'an approval closed by its deadline (onTimeout deny)', workflow: 'refund', input: { amount: 90 },
    drive: async ({ engine, clock }) => { clock.advance(25 * 3_600_000); await engine.suspensionsResolveDue({ limit: 10 }); await engine.runExecutePending(); },
  },
  { file: 'refund-parked', description: 'a run parked on an open approval', workflow: 'refund', input: { amount: 12 } },
  { file: 'fanout', description: 'nested ctx.parallel branches and Promise.all over identical steps', workflow: 'fanout', input: { items: ['ab', 'abc', 'abcd'] } },
  {
    file: 'restock-signal', description: 'a signal with a pinned schema, then a mutating tool', workflow: 'restock', input: {},
    drive: async ({ engine, runId }) => { await engine.signalSend({ runId, namespace: 'golden', name: 'restock', payload: { qty: 7 }, signalId: 'sig-1' }); await engine.runExecutePending(); },
  },
  { file: 'resilient', description: 'a step error the code caught and moved on from', workflow: 'resilient', input: {} },
  { file: 'brittle-failed', description: 'a run that died on a step error (replay would retry it)', workflow: 'brittle', input: {} },
  { file: 'payout-ask', description: 'a tool with policy ask, approved', workflow: 'payout', input: { cents: 2500 }, drive: ({ engine, runId }) => approveFirst(engine, runId, true) },
  { file: 'tree-children', description: 'two child runs awaited with Promise.all', workflow: 'tree', input: { n: 3 }, drive: async ({ engine }) => { await engine.runExecutePending(); } },
  {
    file: 'sleeper', description: 'a durable sleep resolved by its deadline', workflow: 'sleeper', input: {},
    drive: async ({ engine, clock }) => { clock.advance(3_600_001); await engine.suspensionsResolveDue({ limit: 10 }); await engine.runExecutePending(); },
  },
  { file: 'checkout-crashed', description: 'the worker died after the mutating tool\'s intent committed; a new lease redispatched it', workflow: 'checkout', input: { sku: 'gadget', qty: 1 }, crashAt: [5] },
  { file: 'resilient-invalidated', description: 'a finished run resumed with invalidate on its last step', workflow: 'resilient', input: {}, invalidate: [{ kind: 'step', name: 'after' }] },
  { file: 'retried', description: 'a mutating tool failing twice, retried after durable backoff timers (1 s, 2 s), then succeeding', workflow: 'retrier', input: { cents: 700 }, drive: fireTimers },
  { file: 'timed-out', description: 'a step whose first attempt passed its 20 ms timeout, retried after a backoff timer, then answering', workflow: 'timeboxed', input: {}, drive: fireTimers },
];
