import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { JournalCorruptError } from '../../src/engine/errors.js';
import { Registry } from '../../src/engine/registry.js';
import { replayHistory, type ReplayPreview } from '../../src/engine/runtime/resume-preview.js';
import { defineWorkflow, type Workflow, type WorkflowContext } from '../../src/index.js';
import type { JournalEntry } from '../../src/journal/journal-entry.js';
import type { Run } from '../../src/journal/run.js';
import { chargeCard, executions, goldenRegistry, priceLookup, reserveStock } from './golden-scenarios.js';

/*
 * Temporal's replay test, for Waymark: every journal recorded by record-golden.ts replays against
 * the current workflow code in strict mode with zero live calls and the recorded outcome; mutated
 * copies (of the code or of the journal) give the documented outcome: a miss, an orphan, or a typed
 * error, and never a silent re-execution of a completed effect.
 */

interface GoldenRun {
  run: Run;
  entries: JournalEntry[];
  expected: { outcome: ReplayPreview['outcome']; output?: unknown; why?: string };
}

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'golden');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

function load(file: string): GoldenRun[] {
  const parsed = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { runs: GoldenRun[] };
  return parsed.runs.map((g) => ({
    ...g,
    run: { ...g.run, createdAt: new Date(g.run.createdAt), updatedAt: new Date(g.run.updatedAt), leaseExpiresAt: null },
    entries: g.entries.map((e) => ({ ...e, createdAt: new Date(e.createdAt) })),
  }));
}

function golden(name: string): GoldenRun {
  return load(`${name}.json`)[0]!;
}

async function replay(g: GoldenRun, options: { workflow?: Workflow; registry?: Registry; entries?: JournalEntry[]; invalidate?: number[] } = {}) {
  const registry = options.registry ?? goldenRegistry();
  return replayHistory({
    run: g.run,
    workflow: options.workflow ?? registry.workflow(g.run.workflowName),
    registry,
    entries: options.entries ?? g.entries,
    ...(options.invalidate ? { invalidate: options.invalidate } : {}),
  });
}

/** Drops the entry at `seq` and renumbers the rest (seq and refSeq), as if it was never written. */
function withoutEntry(entries: JournalEntry[], seq: number): JournalEntry[] {
  const shift = (n: number) => (n > seq ? n - 1 : n);
  return entries.filter((e) => e.seq !== seq).map((e) => ({ ...e, seq: shift(e.seq), refSeq: e.refSeq === null ? null : shift(e.refSeq) }));
}

beforeEach(() => {
  executions.length = 0;
});

describe('golden journals replay in strict mode with zero live calls', () => {
  it('has recorded journals to replay', () => {
    expect(files.length).toBeGreaterThanOrEqual(10);
  });

  for (const file of files) {
    it(file, async () => {
      for (const g of load(file)) {
        const result = await replay(g);
        expect(result.outcome, `${g.run.workflowName}: ${JSON.stringify(result.liveCall)}`).toBe(g.expected.outcome);
        if (g.expected.outcome === 'succeeded') expect(result.output).toEqual(g.expected.output);
        if (g.expected.outcome === 'live_call') expect(result.liveCall?.why).toBe(g.expected.why);
        else expect(result).toMatchObject({ misses: 0, reruns: 0, orphaned: 0, skipped: 0, invalidResolutions: 0 });
        expect(result.hits).toBeGreaterThan(0);
      }
      expect(executions).toEqual([]);
    });
  }
});

describe('mutated code', () => {
  const tools = [reserveStock, priceLookup, chargeCard];
  const variant = (body: (ctx: WorkflowContext, input: { sku: string; qty: number }) => Promise<unknown>) => {
    const workflow = defineWorkflow({ name: 'checkout', input: z.object({ sku: z.string(), qty: z.number() }) }, body);
    return { workflow, registry: new Registry().register(workflow, ...tools) };
  };

  it('a renamed step is a miss: the strict replay stops there; the old entry is never consumed', async () => {
    const v = variant(async (ctx, { sku, qty }) => {
      await ctx.uuid(); await ctx.now();
      const price = await ctx.tool(priceLookup, { sku });
      await ctx.tool(reserveStock, { sku, qty });
      await ctx.emit({ type: 'reserved', sku });
      return ctx.step('sum', () => price.cents * qty);
    });
    const result = await replay(golden('checkout'), v);
    expect(result).toMatchObject({ outcome: 'live_call', misses: 1, hits: 5, skipped: 1, liveCall: { kind: 'step', name: 'sum', why: 'miss' } });
    expect(executions).toEqual([]);
  });

  it('changed tool arguments are a miss, never a re-execution of the recorded call', async () => {
    const v = variant(async (ctx, { sku, qty }) => {
      await ctx.uuid(); await ctx.now();
      await ctx.tool(priceLookup, { sku });
      return ctx.tool(reserveStock, { sku, qty: qty + 1 });
    });
    const result = await replay(golden('checkout'), v);
    expect(result).toMatchObject({ outcome: 'live_call', misses: 1, liveCall: { kind: 'tool', name: 'reserve_stock' } });
    expect(executions).toEqual([]);
  });

  it('a removed call leaves its entry orphaned: reported, never re-executed', async () => {
    const v = variant(async (ctx, { sku, qty }) => {
      const orderId = await ctx.uuid();
      const at = await ctx.now();
      const price = await ctx.tool(priceLookup, { sku });
      const reservation = await ctx.tool(reserveStock, { sku, qty });
      const total = await ctx.step('total', () => price.cents * qty);
      return { orderId: orderId.length, at: at.getTime() > 0, reservation: reservation.reservation, total };
    });
    const g = golden('checkout');
    const result = await replay(g, v);
    expect(result).toMatchObject({ outcome: 'succeeded', orphaned: 1, misses: 0, output: g.expected.output });
    expect(executions).toEqual([]);
  });

  it('reordered independent calls still replay (content keys, not positions)', async () => {
    const v = variant(async (ctx, { sku, qty }) => {
      const at = await ctx.now();
      const orderId = await ctx.uuid();
      const reservation = await ctx.tool(reserveStock, { sku, qty });
      const price = await ctx.tool(priceLookup, { sku });
      await ctx.emit({ type: 'reserved', sku });
      const total = await ctx.step('total', () => price.cents * qty);
      return { orderId: orderId.length, at: at.getTime() > 0, reservation: reservation.reservation, total };
    });
    const g = golden('checkout');
    expect(await replay(g, v)).toMatchObject({ outcome: 'succeeded', hits: 6, misses: 0, orphaned: 0, output: g.expected.output });
  });
});

describe('mutated journals', () => {
  it('an entry removed from the middle (a gap in seqs) is a JournalCorruptError', async () => {
    const g = golden('checkout');
    await expect(replay(g, { entries: g.entries.filter((e) => e.seq !== 4) })).rejects.toBeInstanceOf(JournalCorruptError);
  });

  it('a removed terminal turns the effect into an intent without outcome: a strict replay stops at the redispatch', async () => {
    const g = golden('checkout');
    const ok = g.entries.find((e) => e.name === 'reserve_stock' && e.status === 'ok')!;
    const result = await replay(g, { entries: withoutEntry(g.entries, ok.seq) });
    expect(result).toMatchObject({ outcome: 'live_call', reruns: 1, liveCall: { name: 'reserve_stock', why: 'redispatch' } });
    expect(executions).toEqual([]);
  });

  it('a removed intent leaves its terminal pointing at nothing: JournalCorruptError', async () => {
    const g = golden('checkout');
    const running = g.entries.find((e) => e.name === 'reserve_stock' && e.status === 'running')!;
    const entries = g.entries.map((e) => (e.seq === running.seq ? { ...e, kind: 'status' as const } : e));
    await expect(replay(g, { entries })).rejects.toThrow(/starts no effect/);
  });

  it('an entry renamed in the journal (same content key) is a NonDeterminismError', async () => {
    const g = golden('checkout');
    const entries = g.entries.map((e) => (e.name === 'total' ? { ...e, name: 'renamed' } : e));
    const result = await replay(g, { entries });
    expect(result).toMatchObject({ outcome: 'failed', error: { name: 'NonDeterminismError', reason: 'non_determinism' } });
    expect(executions).toEqual([]);
  });

  it('an effect edited into a wait (a tool whose entry says suspended) is a NonDeterminismError, nothing runs', async () => {
    const g = golden('checkout');
    const entries = g.entries.map((e) => (e.name === 'price_lookup' ? { ...e, status: 'suspended' as const } : e));
    const result = await replay(g, { entries });
    expect(result).toMatchObject({ outcome: 'failed', error: { name: 'NonDeterminismError', reason: 'non_determinism' } });
    expect(result.error?.message).toMatch(/an effect matched a wait/);
    expect(executions).toEqual([]);
  });

  it('a wait edited into an effect (a sleep whose entry says ok) is a NonDeterminismError', async () => {
    const g = golden('sleeper');
    const resolution = g.entries.find((e) => e.kind === 'sleep' && e.status === 'resolved')!;
    const entries = withoutEntry(g.entries, resolution.seq).map((e) => (e.kind === 'sleep' ? { ...e, status: 'ok' as const } : e));
    const result = await replay(g, { entries });
    expect(result).toMatchObject({ outcome: 'failed', error: { name: 'NonDeterminismError', reason: 'non_determinism' } });
    expect(result.error?.message).toMatch(/a wait matched an effect/);
  });

  it('a resolution edited to fail its pinned schema does not win: the run parks again, counted as invalid', async () => {
    const g = golden('restock-signal');
    const entries = g.entries.map((e) => (e.status === 'resolved' ? { ...e, payload: { source: 'signal', value: { qty: -7 } } } : e));
    expect(await replay(g, { entries })).toMatchObject({ outcome: 'parked', invalidResolutions: 1, orphaned: 1 });
    expect(executions).toEqual([]);
  });

  it('a pinned schema edited without its hash makes every resolution invalid', async () => {
    const g = golden('refund-approved');
    const entries = g.entries.map((e) => (e.status === 'suspended' ? { ...e, payload: { ...(e.payload as object), schema: {} } } : e));
    expect(await replay(g, { entries })).toMatchObject({ outcome: 'parked', invalidResolutions: 1 });
  });

  it('invalidating a completed step previews as one rerun', async () => {
    const g = golden('refund-approved');
    const ok = g.entries.find((e) => e.kind === 'step' && e.status === 'ok')!;
    expect(await replay(g, { invalidate: [ok.seq] })).toMatchObject({ outcome: 'live_call', hits: 1, reruns: 1, liveCall: { name: 'refund', why: 'rerun after cancelled' } });
    expect(executions).toEqual([]);
  });
});
