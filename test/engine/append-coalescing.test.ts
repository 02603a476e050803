import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { journal, NS, setup, shape } from './harness.js';

/*
 * Effects that finish while an append of their execution is in flight go together in its next
 * append: one commit for Promise.all over steps or an agent's parallel tool calls. The journal
 * must hold exactly what one-by-one appends would have written, in call order, and replay it.
 */

let db: MigratedDatabase;
let store: PostgresStore;
/** Entries per journalAppend call, in order. */
const appends: number[] = [];

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_coalescing');
  store = await PostgresStore.connect({ url: db.url, applicationName: 'coalescing', poolSize: 4, limits: { payloadBytes: 1000 } });
  const append = store.journalAppend.bind(store);
  store.journalAppend = (params: Parameters<PostgresStore['journalAppend']>[0]) => {
    appends.push(params.entries.length);
    return append(params);
  };
});
afterAll(async () => {
  await store?.close();
  await db?.drop();
});

const fanOut = defineWorkflow({ name: 'fan-out', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
  const values = await Promise.all(Array.from({ length: n }, (_, i) => ctx.step(`part-${i}`, () => i * 10)));
  const total = await ctx.step('sum', () => values.reduce((a, b) => a + b, 0));
  return { values, total };
});

const oneTooLarge = defineWorkflow({ name: 'one-too-large', input: z.object({}) }, async (ctx) => {
  const settled = await Promise.allSettled([
    ctx.step('small-a', () => 'a'),
    ctx.step('small-b', () => 'b'),
    ctx.step('huge', () => 'x'.repeat(5000)),
    ctx.step('small-c', () => 'c'),
  ]);
  return settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).name));
});

describe('appends of parallel effects', () => {
  it('go together: fewer appends than effects, the journal in call order, and a replay that matches it', async () => {
    const { engine } = setup([fanOut], { store });
    appends.length = 0;
    const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'fan-out', input: { n: 8 }, execute: true });
    expect(execution?.outcome).toBe('succeeded');
    expect(execution?.run?.output).toEqual({ values: [0, 10, 20, 30, 40, 50, 60, 70], total: 280 });
    const entries = await journal(store, run.id);
    expect(shape(entries)).toEqual([...Array.from({ length: 8 }, (_, i) => `ok step part-${i}`), 'ok step sum']);
    const stepAppends = appends.slice(0, -1); // the last is `sum`
    expect(stepAppends.reduce((a, b) => a + b, 0)).toBe(8);
    expect(stepAppends.length).toBeLessThan(8);
    const preview = await engine.runPreview({ runId: run.id, namespace: NS });
    expect(preview).toMatchObject({ outcome: 'succeeded', misses: 0, reruns: 0, orphaned: 0 });
  });

  it('a refused entry fails only its own call; the others are written', async () => {
    // The huge result is over the payload limit: the combined append is refused, nothing written,
    // and retried one by one, so the step alone fails (journaled as an error, after what was queued).
    const { engine } = setup([oneTooLarge], { store });
    appends.length = 0;
    const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'one-too-large', input: {}, execute: true });
    expect(execution?.outcome).toBe('succeeded');
    expect(execution?.run?.output).toEqual(['a', 'b', 'EffectFailedError', 'c']);
    const entries = (await journal(store, run.id)).filter((e) => e.kind === 'step');
    expect(entries.map((e) => `${e.status} ${e.name}`)).toEqual(['ok small-a', 'ok small-b', 'ok small-c', 'error huge']);
    expect(Math.max(...appends)).toBeGreaterThan(1); // the combined append was tried (and refused whole)
  });
});
