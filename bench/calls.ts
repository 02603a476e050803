// Item 8 of the benchmark: what the API's per-run calls cost on a run of 10 entries and on one of
// 10,000 (issue 22, goal 4: the same, a ratio of at most 1.2). In process, on the engine and the
// read functions the RPCs call (replica-engine.ts), so the figure is the store work, not HTTP/2.
import { z } from 'zod';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import { runView } from '../src/engine/read/run-view.js';
import { runSpend } from '../src/engine/read/spend.js';
import { approvalGet } from '../src/engine/read/approvals.js';
import { approvalDecide } from '../src/engine/runtime/resolutions.js';
import { approvalId } from '../src/engine/runtime/suspension.js';
import type { EngineBench } from './waymark-inprocess.js';
import { percentile } from './stats.js';

/** `steps` steps, then an approval: a parked run whose journal holds steps + 3 entries. */
export const callShape = defineWorkflow({ name: 'bench-call-shape', input: z.object({ steps: z.number() }) }, async (ctx, { steps }) => {
  for (let i = 0; i < steps; i++) await ctx.step('s', () => i);
  return ctx.approve({ title: 'go?' });
});

/** The same journal shape built faster (steps at once, journaled together): runs that CancelRun uses up, one per iteration. */
export const callShapeWide = defineWorkflow({ name: 'bench-call-shape-wide', input: z.object({ steps: z.number() }) }, async (ctx, { steps }) => {
  await Promise.all(Array.from({ length: steps }, (_, i) => ctx.step('s', () => i)));
  return ctx.approve({ title: 'go?' });
});

export interface CallRow { call: string; smallP50Ms: number; largeP50Ms: number; ratio: number }

const NS = 'bench';

/**
 * Each call `iterations` times on a run of `small` and one of `large` entries, alternating, p50
 * each; CancelRun, which ends its run, `cancels` times on as many parked runs of each size.
 */
export async function measureCalls(bench: EngineBench, small: number, large: number, iterations: number, cancels: number): Promise<CallRow[]> {
  const { engine, store } = bench;
  const park = async (steps: number, key: string, workflowName: string = callShape.name) => {
    const { run } = await engine.runStart({ namespace: NS, workflowName, input: { steps }, execute: true, idempotencyKey: key, budgetUsd: 100 });
    const parked = await store.runGet({ runId: run.id, namespace: NS });
    if (parked.status !== 'SUSPENDED') throw new Error(`call bench run is ${parked.status}, expected SUSPENDED`);
    const [wait] = await engine.runWaits({ runId: run.id, namespace: NS });
    return { run: parked, key, approval: approvalId(run.id, wait!.seq) };
  };
  const tag = Date.now().toString(36);
  const runs = { small: await park(small - 3, `calls-small-${tag}`), large: await park(large - 3, `calls-large-${tag}`) };
  // A decided approval: each DecideApproval after the first reads the same and is answered already_resolved.
  for (const r of Object.values(runs)) {
    await approvalDecide(store, { namespace: NS, approvalId: r.approval, approve: true, by: 'bench', requestId: `first-${r.key}` });
  }
  let n = 0;
  const calls: [string, (r: typeof runs.small) => Promise<unknown>][] = [
    ['GetRun (run, spend with children, waiting_on)', async (r) => {
      const view = await runView(store, { runId: r.run.id, namespace: NS });
      return engine.runWaits({ runId: view.run.id, namespace: NS });
    }],
    ['StartRun with a reused key (the first call\'s run and its waits)', async (r) => {
      const { run } = await engine.runStart({ namespace: NS, workflowName: callShape.name, input: { steps: 0 }, execute: false, idempotencyKey: r.key });
      return engine.runWaits({ runId: run.id, namespace: NS });
    }],
    ['GetApproval', (r) => approvalGet(store, { namespace: NS, approvalId: r.approval })],
    ['DecideApproval (already decided: read, validate, journalResolve)', (r) =>
      approvalDecide(store, { namespace: NS, approvalId: r.approval, approve: true, by: 'bench', requestId: `again-${n++}` })],
    ['budget check before a model call (the run tree\'s spend and reservations)', (r) => runSpend({ store, runId: r.run.id, namespace: NS })],
    // What the RPC awaits (replica-engine.ts): the resume itself; the execution it makes runnable runs afterwards.
    ['ResumeRun (no invalidate: lease taken and given back, the run PENDING)', (r) => engine.runResume({ runId: r.run.id, namespace: NS, execute: false })],
  ];
  const rows: CallRow[] = [];
  for (const [call, fn] of calls) {
    const times = { small: [] as number[], large: [] as number[] };
    for (let i = 0; i < iterations; i++) {
      for (const size of ['small', 'large'] as const) {
        const t = performance.now();
        await fn(runs[size]);
        times[size].push(performance.now() - t);
      }
    }
    const smallP50Ms = percentile(times.small, 50);
    const largeP50Ms = percentile(times.large, 50);
    rows.push({ call, smallP50Ms, largeP50Ms, ratio: largeP50Ms / smallP50Ms });
  }
  // CancelRun ends its run: parked runs made beforehand, one per call, both sizes alternating.
  const parked = { small: [] as string[], large: [] as string[] };
  for (let i = 0; i < cancels; i++) {
    for (const size of ['small', 'large'] as const) {
      parked[size].push((await park((size === 'small' ? small : large) - 3, `calls-cancel-${size}-${i}-${tag}`, callShapeWide.name)).run.id);
    }
  }
  const times = { small: [] as number[], large: [] as number[] };
  for (let i = 0; i < cancels; i++) {
    for (const size of ['small', 'large'] as const) {
      const t = performance.now();
      await engine.runCancel({ runId: parked[size][i]!, namespace: NS, reason: 'bench' });
      times[size].push(performance.now() - t);
    }
  }
  const smallP50Ms = percentile(times.small, 50);
  const largeP50Ms = percentile(times.large, 50);
  rows.push({ call: 'CancelRun (closes the open approval, forces CANCELLED)', smallP50Ms, largeP50Ms, ratio: largeP50Ms / smallP50Ms });
  return rows;
}
