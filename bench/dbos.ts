import { DBOS } from '@dbos-inc/dbos-sdk';
import { percentile, pool } from './stats.js';
import { STEPS } from './waymark-inprocess.js';

/**
 * DBOS Transact with the same ten trivial steps, on the same PostgreSQL server (its own system
 * database), measured the same way: the per-step time inside the workflow, and steps/s overall.
 */
const stepLatencies: number[] = [];

async function tenSteps(n: number): Promise<{ total: number }> {
  let total = 0;
  for (let i = 0; i < STEPS; i++) {
    const t = performance.now();
    total += await DBOS.runStep(async () => n + i, { name: `step-${i}` });
    stepLatencies.push(performance.now() - t);
  }
  return { total };
}

let registered: ((n: number) => Promise<{ total: number }>) | null = null;

export async function launchDbos(systemDatabaseUrl: string): Promise<void> {
  DBOS.setConfig({ name: 'waymark-bench', systemDatabaseUrl, logLevel: 'error', systemDatabasePoolSize: 20 });
  registered = DBOS.registerWorkflow(tenSteps, { name: 'tenSteps' });
  await DBOS.launch();
}

export async function measureDbos(runs: number, concurrency: number) {
  if (!registered) throw new Error('launchDbos first');
  const wf = registered;
  stepLatencies.length = 0;
  const started = performance.now();
  await pool(runs, concurrency, async (i) => {
    const handle = await DBOS.startWorkflow(wf)(i);
    await handle.getResult();
  });
  const seconds = (performance.now() - started) / 1000;
  return { stepsPerSec: (runs * STEPS) / seconds, stepP50Ms: percentile(stepLatencies, 50), stepP99Ms: percentile(stepLatencies, 99) };
}

export async function shutdownDbos(): Promise<void> {
  await DBOS.shutdown();
}
