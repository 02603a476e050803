import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { NS, setup } from './harness.js';

/*
 * A parked run holds nothing in the process (issue 31 goal 1, docs/workflows.md "Timers"): once its
 * execution parked, the body, its context, its execution and the journal it read are garbage, so a
 * replica with 100,000 runs parked on long waits keeps only what is due soon. Counted with weak
 * references to each execution's context after full collections, not with timings or RSS.
 * Before the fix every call of an over execution returned one shared never-settling promise, whose
 * reaction list kept every parked body (and through it its execution) alive for good.
 */

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Every context a body was given, weakly: alive only while something still refers to its execution. */
const contexts: WeakRef<object>[] = [];

const sleeper = defineWorkflow({ name: 'sleeper', input: z.object({}) }, async (ctx) => {
  contexts.push(new WeakRef(ctx));
  await ctx.sleep('2h');
  return 'woke';
});

const approver = defineWorkflow({ name: 'approver', input: z.object({}) }, async (ctx) => {
  contexts.push(new WeakRef(ctx));
  await ctx.step('before', () => 1);
  return ctx.approve({ title: 'ship it?' });
});

/** Waits for `go` three times: each signal resumes it (a new execution) and it parks again. */
const looper = defineWorkflow({ name: 'looper', input: z.object({}) }, async (ctx) => {
  contexts.push(new WeakRef(ctx));
  for (let i = 0; i < 3; i++) await ctx.signal('go');
  return 'done';
});

async function collect(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return contexts.filter((ref) => ref.deref() !== undefined).length;
}

describe('parked runs hold no execution in memory', () => {
  it('sleeps, approvals and signal waits: every parked execution is collectable, resumed ones too', async () => {
    const { engine, store } = setup([sleeper, approver, looper]);
    const PER_KIND = 40;
    const runIds: string[] = [];
    for (const name of ['sleeper', 'approver', 'looper']) {
      for (let i = 0; i < PER_KIND; i++) {
        const { run, execution } = await engine.runStart({ namespace: NS, workflowName: name, input: {}, execute: true });
        expect(execution?.outcome).toBe('suspended');
        runIds.push(run.id);
      }
    }
    // Resume each looper twice: every signal is a new execution, which parks again.
    for (const runId of runIds.slice(2 * PER_KIND)) {
      for (let round = 0; round < 2; round++) {
        await engine.signalSend({ namespace: NS, runId, name: 'go', payload: null, signalId: `${runId}-${round}` });
        const [resumed] = await engine.runExecutePending({ namespace: NS });
        expect(resumed?.outcome).toBe('suspended');
      }
    }
    for (const runId of runIds) expect((await store.runGet({ runId, namespace: NS }))?.status).toBe('SUSPENDED');
    // The positive side of the count: one context per execution (3 per looper).
    expect(contexts.length).toBe(2 * PER_KIND + 3 * PER_KIND);
    expect(await collect()).toBe(0);
  });
});
