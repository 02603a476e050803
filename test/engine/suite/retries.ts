import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWorkflow } from '../../../src/index.js';
import { NS } from '../harness.js';
import type { Suite } from './support.js';

/** Retry policies, per-effect timeouts, and the handled-last-error rule (docs/journal.md "What replay does"). */
export function retriesSuite(suite: Suite): void {
  const { setup, entriesOf } = suite;

  describe(`${suite.label}: a handled error as the last effect`, () => {
    it('an error caught as the run\'s last effect does not rerun when the SUCCEEDED run is resumed', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'handles-last', input: z.object({}) }, async (ctx) => {
        await ctx.step('first', () => 1);
        try {
          await ctx.step('last', () => {
            calls++;
            throw new Error('expected failure');
          });
        } catch {
          return { handled: true };
        }
        return { handled: false };
      });
      const { engine, store } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'handles-last', input: {}, execute: true });
      expect(run.status).toBe('SUCCEEDED');
      const preview = await engine.runPreview({ runId: run.id, namespace: NS });
      expect(preview).toMatchObject({ outcome: 'succeeded', hits: 2, reruns: 0, misses: 0 });
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUCCEEDED');
      expect(resumed.run.output).toEqual({ handled: true });
      expect(calls).toBe(1);
      expect((await entriesOf(store, run.id)).filter((e) => e.kind === 'step' && e.name === 'last')).toHaveLength(1);
    });

    it('an error the run died on still reruns on resume: a FAILED status is no evidence it was handled', async () => {
      let calls = 0;
      const wf = defineWorkflow({ name: 'dies-last', input: z.object({}) }, async (ctx) =>
        ctx.step('last', () => {
          if (++calls === 1) throw new Error('first time');
          return 'second time';
        }));
      const { engine } = await setup([wf]);
      const { run } = await engine.runStart({ namespace: NS, workflowName: 'dies-last', input: {}, execute: true });
      expect(run.status).toBe('FAILED');
      const resumed = await engine.runResume({ runId: run.id, namespace: NS });
      expect(resumed.run.status).toBe('SUCCEEDED');
      expect(resumed.run.output).toBe('second time');
      expect(calls).toBe(2);
    });
  });
}
