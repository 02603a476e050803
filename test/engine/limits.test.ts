import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, defineWorkflow, EffectFailedError, PayloadTooLargeError } from '../../src/index.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock, NS, setup, shape } from './harness.js';

/*
 * A store refusal (payload too large, journal full) writes nothing and would refuse again, so the
 * engine hands it to the workflow like any other error instead of treating it as a crash (which
 * would only loop through lease expiry and recovery).
 */
const big = 'x'.repeat(2048);
const storeWith = (limits: { payloadBytes?: number; journalEntries?: number; journalBytes?: number }) => {
  const clock = new FakeClock();
  return { clock, store: new MemoryStore({ clock: clock.now, limits }) };
};

describe('limits', () => {
  it('a result over the payload limit records the effect as failed, and the code can move on', async () => {
    const wf = defineWorkflow({ name: 'big-result', input: z.object({}) }, async (ctx) => {
      const err = await ctx.step('huge', () => big).catch((e: unknown) => e);
      return { failedWith: (err as EffectFailedError).errorName, isEffectError: err instanceof EffectFailedError };
    });
    const { engine, store } = setup([wf], storeWith({ payloadBytes: 1024 }));
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'big-result', input: {}, execute: true });
    expect(run.output).toEqual({ failedWith: 'PayloadTooLargeError', isEffectError: true });
    expect(shape(await store.journalList({ runId: run.id }))).toEqual(['error step huge']);
  });

  it('arguments over the limit refuse the call before anything runs or is written', async () => {
    let ran = false;
    const t = defineTool({ name: 'takes-much', description: 'd', input: z.object({ s: z.string() }), execute: () => { ran = true; return 1; } });
    const wf = defineWorkflow({ name: 'big-args', input: z.object({}) }, async (ctx) => {
      const err = await ctx.tool(t, { s: big }).catch((e: unknown) => e);
      return err instanceof PayloadTooLargeError;
    });
    const { engine, store } = setup([wf, t], storeWith({ payloadBytes: 1024 }));
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'big-args', input: {}, execute: true });
    expect(run.output).toBe(true);
    expect(ran).toBe(false);
    expect(shape(await store.journalList({ runId: run.id }))).toEqual([]);
  });

  it('an output over the limit fails the run', async () => {
    const wf = defineWorkflow({ name: 'big-output', input: z.object({}) }, async () => big);
    const { engine } = setup([wf], storeWith({ payloadBytes: 1024 }));
    const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'big-output', input: {}, execute: true });
    expect(execution!.outcome).toBe('failed');
    expect(run.error).toMatchObject({ name: 'PayloadTooLargeError', reason: 'payload_too_large' });
  });

  it('a full journal fails the run with JournalFullError', async () => {
    const wf = defineWorkflow({ name: 'chatty', input: z.object({}) }, async (ctx) => {
      for (let i = 0; i < 10; i++) await ctx.step(`s${i}`, () => i);
      return 'never';
    });
    const { engine } = setup([wf], storeWith({ journalEntries: 6 }));
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'chatty', input: {}, execute: true });
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({ name: 'JournalFullError' });
  });

  it('a journal past its byte limit fails the run with JournalFullError naming the byte limit, and the refused result is not written', async () => {
    const wf = defineWorkflow({ name: 'wordy', input: z.object({}) }, async (ctx) => {
      for (let i = 0; i < 10; i++) await ctx.step(`s${i}`, () => 'y'.repeat(400));
      return 'never';
    });
    const { engine, store } = setup([wf], storeWith({ journalBytes: 1_500 }));
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'wordy', input: {}, execute: true });
    expect(run.status).toBe('FAILED');
    expect(run.error).toMatchObject({ name: 'JournalFullError', message: expect.stringMatching(/limit of 1500 bytes of journaled payloads; continue as new/) });
    // Three results of 402 bytes fit; the fourth was refused whole.
    expect(shape(await store.journalList({ runId: run.id })).filter((s) => s.startsWith('ok step'))).toEqual(['ok step s0', 'ok step s1', 'ok step s2']);
    expect(run.journalBytes).toBe(3 * 402);
  });
});
