import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import type { EngineBench } from './waymark-inprocess.js';

/**
 * A long journal: `steps` completed steps, then a wait, so the run can be resumed by a signal. With
 * `batch` the steps go `batch` at a time (Promise.all, so one append per batch): a 100,000-entry run
 * is built in seconds rather than minutes. The journal is the same whatever the batch (one scope,
 * the same content key, occurrences in call order), so a body with another batch replays it.
 */
export const longRun = defineWorkflow({ name: 'bench-long-run', input: z.object({ steps: z.number(), batch: z.number().int().min(1).default(1) }).passthrough() }, async (ctx, { steps, batch }) => {
  let total = 0;
  for (let i = 0; i < steps; i += batch) {
    const values = await Promise.all(Array.from({ length: Math.min(batch, steps - i) }, (_, j) => ctx.step('s', () => i + j)));
    for (const v of values) total += v;
  }
  const go = await ctx.signal('go', { schema: z.object({}) });
  return { total, go };
});

/**
 * Builds a run whose journal holds at least `entries` completed entries and parks it, then resumes
 * it in a fresh process (so its memory is measured alone): the time from the signal to the run's
 * end, and that process's peak RSS above its RSS before the resume.
 */
export async function measureReplay(bench: EngineBench, url: string, entries: number, batch = 1) {
  const { run } = await bench.engine.runStart({ namespace: 'bench', workflowName: longRun.name, input: { steps: entries, batch }, execute: true });
  const parked = await bench.store.runGet({ runId: run.id, namespace: 'bench' });
  if (parked.status !== 'SUSPENDED') throw new Error(`long run is ${parked.status}, expected SUSPENDED`);
  // The resume replays one step at a time whatever built it: a body that awaits each step is the
  // common shape, and it replays slower than a batch (docs/performance.md "Issue 22, goal 6").
  if (batch !== 1) await bench.store.pool.query(`UPDATE runs SET input = jsonb_set(input, '{batch}', '1') WHERE id = $1`, [run.id]);
  const out = await resumeInChild(url, run.id);
  const result = JSON.parse(out.trim().split('\n').pop()!) as { ms: number; peakRssMb: number; rssBeforeMb: number; entries: number };
  return { entries: result.entries, resumeMs: result.ms, peakRssMb: result.peakRssMb, extraRssMb: result.peakRssMb - result.rssBeforeMb };
}

/**
 * Resumes a parked bench run (signal `go`) in a fresh process, bench/replay-child.ts, so its memory
 * is measured alone; its last line of output, JSON {ms, peakRssMb, rssBeforeMb, entries}.
 */
export async function resumeInChild(url: string, runId: string): Promise<string> {
  const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'replay-child.ts');
  return new Promise<string>((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child, url, runId], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
    p.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`replay child exited ${code}`))));
  });
}
