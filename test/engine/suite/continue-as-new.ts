import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../../src/index.js';
import { CONTINUE_LABELS, continueKey } from '../../../src/journal/fork-labels.js';
import type { Run } from '../../../src/journal/run.js';
import type { JournalStore } from '../../../src/store/store.js';
import { NS, TTL } from '../harness.js';
import type { Suite } from './support.js';

/*
 * ctx.continueAsNew (docs/workflows.md "Continue as new"): the run ends SUCCEEDED and its successor
 * (same workflow, the new input, a fresh journal, what is left of the budget, the user's labels) is
 * created in the same store step, linked both ways; a refused hand-over fails the run and creates
 * nothing; a fenced one writes nothing.
 */

const counter = defineWorkflow({ name: 'can-counter', input: z.object({ gen: z.number(), total: z.number() }) }, async (ctx, { gen, total }) => {
  const added = await ctx.step(`add-${gen}`, () => gen * 10);
  if (gen < 3) return ctx.continueAsNew({ gen: gen + 1, total: total + added });
  return { gen, total: total + added };
});

const badInput = defineWorkflow({ name: 'can-bad', input: z.object({ n: z.number() }) }, async (ctx) => {
  await ctx.step('once', () => 1);
  return ctx.continueAsNew({ n: 'not a number' });
});

const kid = defineWorkflow({ name: 'can-kid', input: z.object({}) }, async (ctx) => ctx.continueAsNew({}));
const parent = defineWorkflow({ name: 'can-parent', input: z.object({}) }, async (ctx) => ctx.child(kid, {}).catch((e: Error) => e.message));

async function successorOf(store: JournalStore, run: Run): Promise<Run> {
  return store.runGet({ runId: run.labels[CONTINUE_LABELS.as]!, namespace: NS });
}

export function continueAsNewSuite(suite: Suite): void {
  const { setup, entriesOf } = suite;

  describe(`${suite.label}: continue as new`, () => {
    it('ends the run and creates its successor in one step, linked both ways, with a fresh journal, the rest of the budget and the user labels', async () => {
      const { engine, store } = await setup([counter]);
      const { run: first, execution } = await engine.runStart({
        namespace: NS, workflowName: 'can-counter', input: { gen: 1, total: 0 }, execute: true, budgetUsd: 5, labels: { team: 'ops' },
      });
      const next = await successorOf(store, first);
      expect(first).toMatchObject({ status: 'SUCCEEDED', output: { continuedAsNew: next.id } });
      expect(execution).toMatchObject({ outcome: 'succeeded', continuedAs: next.id });
      expect(next).toMatchObject({
        status: 'PENDING', workflowName: 'can-counter', input: { gen: 2, total: 10 }, budgetUsd: 5, nextSeq: 0, parentRunId: null,
        idempotencyKey: continueKey(first.id), labels: { team: 'ops', [CONTINUE_LABELS.from]: first.id },
      });
      expect((await entriesOf(store, first.id)).map((e) => `${e.kind} ${e.name} ${e.status}`)).toEqual([
        'status RUNNING info', 'step add-1 ok', 'status SUCCEEDED info',
      ]);
      expect(await entriesOf(store, next.id)).toEqual([]);

      // The chain runs on wherever executors claim it, each run handing over once.
      const chain = [first];
      for (let i = 0; i < 5 && chain.at(-1)!.labels[CONTINUE_LABELS.as]; i++) {
        const successor = await successorOf(store, chain.at(-1)!);
        await engine.driver.execute({ runId: successor.id, namespace: NS });
        chain.push(await store.runGet({ runId: successor.id, namespace: NS }));
      }
      expect(chain.map((r) => r.input)).toEqual([{ gen: 1, total: 0 }, { gen: 2, total: 10 }, { gen: 3, total: 30 }]);
      expect(chain.at(-1)).toMatchObject({ status: 'SUCCEEDED', output: { gen: 3, total: 60 } });
      expect(chain.at(-1)!.labels[CONTINUE_LABELS.as]).toBeUndefined();
      for (let i = 1; i < chain.length; i++) {
        expect(chain[i]!.labels[CONTINUE_LABELS.from]).toBe(chain[i - 1]!.id);
        expect(chain[i - 1]!.labels[CONTINUE_LABELS.as]).toBe(chain[i]!.id);
        expect((await entriesOf(store, chain[i]!.id)).filter((e) => e.kind === 'step').map((e) => e.name)).toEqual([`add-${i + 1}`]);
      }
    });

    it('an input the workflow refuses fails the run and creates no successor', async () => {
      const { engine, store } = await setup([badInput]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'can-bad', input: { n: 1 }, execute: true });
      expect(run).toMatchObject({ status: 'FAILED', error: { name: 'InvalidInputError' } });
      expect(run.labels[CONTINUE_LABELS.as]).toBeUndefined();
      await expect(store.runCreate({ namespace: NS, workflowName: 'can-bad', workflowVersion: '1', workflowDigest: 'x', input: { n: 1 }, idempotencyKey: continueKey(run.id) }))
        .resolves.toMatchObject({ created: true });
    });

    it('a child run cannot continue as new: it fails and its parent sees why', async () => {
      const { engine, store } = await setup([kid, parent]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'can-parent', input: {}, execute: true });
      await engine.runExecutePending();
      await engine.runExecutePending();
      const [child] = (await store.runList({ namespace: NS, parentRunId: run.id, pageSize: 10 })).runs;
      expect(child).toMatchObject({ status: 'FAILED', error: { name: 'ContinueAsNewRefusedError' } });
      expect((await store.runGet({ runId: run.id, namespace: NS })).output).toMatch(/cannot continue as new/);
    });

    it('the store\'s hand-over is fenced by the lease: a stale lease writes neither the end nor the successor', async () => {
      const { store } = await setup([counter]);
      const { run, lease } = await store.runCreate({
        namespace: NS, workflowName: 'can-counter', workflowVersion: '1', workflowDigest: 'd', input: { gen: 1, total: 0 }, leaseFor: { holder: 'a', ttlMs: TTL, recordRunning: true },
      });
      const successor = { namespace: NS, workflowName: 'can-counter', workflowVersion: '1', workflowDigest: 'd', input: { gen: 2, total: 0 } };
      await expect(store.runContinueAsNew({ lease: { ...lease!, epoch: lease!.epoch + 1 }, successor })).rejects.toMatchObject({ name: 'LeaseLostError' });
      expect(await store.runGet({ runId: run.id, namespace: NS })).toMatchObject({ status: 'RUNNING', nextSeq: 1 });
      expect((await store.runList({ namespace: NS, pageSize: 10 })).runs.map((r) => r.id)).toEqual([run.id]);
      const handed = await store.runContinueAsNew({ lease: lease!, successor });
      expect(handed.run).toMatchObject({ status: 'SUCCEEDED', nextSeq: 2, labels: { [CONTINUE_LABELS.as]: handed.successor.id } });
      expect(handed.entry).toMatchObject({ kind: 'status', name: 'SUCCEEDED', seq: 1 });
      await expect(store.runContinueAsNew({ lease: lease!, successor })).rejects.toMatchObject({ name: 'LeaseLostError' });
      expect((await store.runList({ namespace: NS, pageSize: 10 })).runs).toHaveLength(2);
    });
  });
}
