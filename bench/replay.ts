import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import type { EngineBench } from './waymark-inprocess.js';

/** A long journal: `steps` completed steps, then a wait, so the run can be resumed by a signal. */
export const longRun = defineWorkflow({ name: 'bench-long-run', input: z.object({ steps: z.number() }) }, async (ctx, { steps }) => {
  let total = 0;
  for (let i = 0; i < steps; i++) total += await ctx.step('s', () => i);
  const go = await ctx.signal('go', { schema: z.object({}) });
  return { total, go };
});

/**
 * Builds a run whose journal holds at least `entries` completed entries and parks it, then resumes
 * it in a fresh process (so its memory is measured alone): the time from the signal to the run's
 * end, and that process's peak RSS above its RSS before the resume.
 */
export async function measureReplay(bench: EngineBench, url: string, entries: number) {
  const { run } = await bench.engine.runStart({ namespace: 'bench', workflowName: longRun.name, input: { steps: entries }, execute: true });
  const parked = await bench.store.runGet({ runId: run.id, namespace: 'bench' });
  if (parked.status !== 'SUSPENDED') throw new Error(`long run is ${parked.status}, expected SUSPENDED`);
  const child = path.join(path.dirname(fileURLToPath(import.meta.url)), 'replay-child.ts');
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', child, url, run.id], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    p.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
    p.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`replay child exited ${code}`))));
  });
  const result = JSON.parse(out.trim().split('\n').pop()!) as { ms: number; peakRssMb: number; rssBeforeMb: number; entries: number };
  return { entries: result.entries, resumeMs: result.ms, peakRssMb: result.peakRssMb, extraRssMb: result.peakRssMb - result.rssBeforeMb };
}
