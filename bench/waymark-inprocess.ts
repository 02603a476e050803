import { pino } from 'pino';
import { z } from 'zod';
import { RunEngine } from '../src/engine/run-engine.js';
import { Registry } from '../src/engine/registry.js';
import { defineWorkflow } from '../src/engine/author/workflow.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { noCpu, type CpuWindow } from './cpu.js';
import { percentile, pool } from './stats.js';
import type { Limits } from '../src/journal/limits.js';

export const STEPS = 10;

/** Per-step latencies observed inside the workflow body (time from calling ctx.step to its result). */
const stepLatencies: number[] = [];

const stepsWorkflow = (name: string, intent: boolean) => defineWorkflow({ name, input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
  let total = 0;
  for (let i = 0; i < STEPS; i++) {
    const t = performance.now();
    total += await ctx.step(`step-${i}`, () => n + i, { intent });
    stepLatencies.push(performance.now() - t);
  }
  return { total };
});

/** Ten steps started at once (Promise.all): their results are journaled together (execution.ts). */
export const tenParallelSteps = defineWorkflow({ name: 'bench-ten-parallel-steps', input: z.object({ n: z.number() }) }, async (ctx, { n }) => {
  const values = await Promise.all(Array.from({ length: STEPS }, (_, i) => {
    const t = performance.now();
    return ctx.step(`step-${i}`, () => n + i).then((v) => {
      stepLatencies.push(performance.now() - t);
      return v;
    });
  }));
  return { total: values.reduce((a, b) => a + b, 0) };
});

/** The default step: one journal write (its result). */
export const tenSteps = stepsWorkflow('bench-ten-steps', false);
/** Steps with `{ intent: true }`: an intent, then the result (two writes; the default before 0.2). */
export const tenIntentSteps = stepsWorkflow('bench-ten-intent-steps', true);

export interface EngineBench {
  engine: RunEngine;
  store: PostgresStore;
  close(): Promise<void>;
}

/** `appendsInFlight: 0` turns group commit off (PostgresStoreOptions); `limits` as a server's settings would set them. */
export async function openEngine(url: string, extra: Parameters<Registry['register']> = [], options: { appendsInFlight?: number; limits?: Partial<Limits> } = {}): Promise<EngineBench> {
  const store = await PostgresStore.connect({ url, poolSize: 20, applicationName: 'waymark-bench', ...options });
  await migrate({ pool: store.pool });
  const registry = new Registry().register(tenSteps, tenIntentSteps, tenParallelSteps, ...extra);
  const engine = new RunEngine({ store, registry, holder: `bench:${process.pid}`, leaseTtlMs: 30_000, logger: pino({ level: 'warn' }) });
  return { engine, store, close: () => store.close() };
}

/** 200 runs of the ten-step workflow, each started with execute=true (StartRun with wait, in process). */
export async function measureWaymark(bench: EngineBench, runs: number, concurrency: number, workflowName = tenSteps.name, postgres: CpuWindow = noCpu) {
  stepLatencies.length = 0;
  const cpuBefore = process.cpuUsage();
  const pgSince = postgres();
  const started = performance.now();
  await pool(runs, concurrency, async (i) => {
    const { execution } = await bench.engine.runStart({ namespace: 'bench', workflowName, input: { n: i }, execute: true });
    if (execution?.outcome !== 'succeeded') throw new Error(`bench run ended ${execution?.outcome}: ${String(execution?.error)}`);
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    stepsPerSec: (runs * STEPS) / seconds,
    stepP50Ms: percentile(stepLatencies, 50),
    stepP99Ms: percentile(stepLatencies, 99),
    /** This process's CPU (the engine, the pg driver) and PostgreSQL's, per run, over the pass. */
    nodeCpuMsPerRun: (cpu.user + cpu.system) / 1000 / runs,
    postgresCpuMsPerRun: pgSince() / runs,
  };
}
