import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../src/engine/author/workflow.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { FakeClock, journal, NS, setup } from './harness.js';

/*
 * StartRun with wait creates the run with its lease and its RUNNING entry in one write
 * (runCreate with leaseFor.recordRunning), then executes it: no separate RUNNING status change and
 * no journal read before the first step. The journal is the same as before that shortcut.
 */
const waitThenStep = defineWorkflow({ name: 'wait-then-step', input: z.object({}) }, async (ctx) => {
  await ctx.signal('go');
  await ctx.signal('go');
  return ctx.step('a', () => 1);
});

const twoSteps = defineWorkflow({ name: 'two-steps', input: z.object({}) }, async (ctx) => {
  const a = await ctx.step('a', () => 1);
  const b = await ctx.step('b', () => 2);
  return { sum: a + b };
});

describe('starting a run and executing it here', () => {
  it('writes the RUNNING entry with the run, and reads no journal before its first step', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const calls: string[] = [];
    for (const method of ['runCreate', 'runStatusSet', 'journalList', 'journalAppend'] as const) {
      const original = store[method].bind(store) as (p: unknown) => Promise<unknown>;
      (store as unknown as Record<string, unknown>)[method] = (p: { status?: string }) => {
        calls.push(method === 'runStatusSet' ? `${method} ${p.status}` : method);
        return original(p);
      };
    }
    const { engine } = setup([twoSteps], { store, clock });
    const { run, execution } = await engine.runStart({ namespace: NS, workflowName: 'two-steps', input: {}, execute: true });
    expect(execution?.outcome).toBe('succeeded');
    expect(calls).toEqual(['runCreate', 'journalAppend', 'journalAppend', 'runStatusSet SUCCEEDED']);
    const entries = await journal(store, run.id);
    expect(entries.map((e) => `${e.seq} ${e.kind} ${e.name}`)).toEqual(['0 status RUNNING', '1 step a', '2 step b', '3 status SUCCEEDED']);
  });

  it('resumes a run with its lease and RUNNING entry in one write, and no journal read when it parked here', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ clock: clock.now });
    const calls: string[] = [];
    for (const method of ['runLeaseAcquire', 'runLeaseAcquireRunning', 'runStatusSet', 'journalList', 'journalAppend'] as const) {
      const original = store[method].bind(store) as (p: unknown) => Promise<unknown>;
      (store as unknown as Record<string, unknown>)[method] = (p: { status?: string }) => {
        calls.push(method === 'runStatusSet' ? `${method} ${p.status}` : method);
        return original(p);
      };
    }
    const { engine } = setup([waitThenStep], { store, clock });
    const { run } = await engine.runStart({ namespace: NS, workflowName: 'wait-then-step', input: {}, execute: true });
    for (const i of [1, 2]) {
      await engine.signalSend({ runId: run.id, namespace: NS, name: 'go', payload: i, signalId: `go-${i}` });
      calls.splice(0);
      await engine.runExecute({ runId: run.id, namespace: NS });
      // The first resume reads the journal (a run created here kept nothing); the second, none.
      expect(calls).toEqual(i === 1
        ? ['runLeaseAcquireRunning', 'journalList', 'journalAppend', 'runStatusSet SUSPENDED']
        : ['runLeaseAcquireRunning', 'journalAppend', 'runStatusSet SUCCEEDED']);
    }
  });
});
