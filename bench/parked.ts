// Parked runs (issue 31 goal 1): a `waymark server` process's memory and idle CPU with 1,000 and then
// 100,000 runs parked on it on 2-hour sleeps. Only the deadlines due soon are held in memory (the
// replica's horizon, the sweeper's alarm), and the resume cache is bounded, so both should stay flat.
// Alone: `node --import tsx bench/parked.ts [N…]`.
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import { Registry } from '../src/engine/registry.js';
import { RunEngine } from '../src/engine/run-engine.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { processCpuMs } from './cpu.js';
import { runAlone } from './postgres.js';
import { startServer } from './grpc.js';
import { park } from './workflows.js';

const SETTLE_MS = 5_000;
const HOLD_MS = 5_000;
/**
 * The server's V8 heap cap (MiB). Small on purpose: were anything held per parked run, parking
 * 100,000 would run the server out of heap and fail the row (before the fix of issue 31 it did at
 * about 40,000 with 192 MiB), so the row proves memory flat rather than reading it off RSS alone.
 */
const HEAP_CAP_MIB = 128;

export interface ParkedFigure { parked: number; rssMiB: number; cores: number; parkPerSec: number }

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : Number.NaN;
}

/**
 * One server (executing); runs are created PENDING from this process and parked by the server, up
 * to each of `counts` in turn; at each, after the server settles, its RSS and its CPU over HOLD_MS.
 */
export async function measureParked(url: string, counts: number[], progress: (m: string) => void = () => undefined): Promise<ParkedFigure[]> {
  const server = await startServer(url, { NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MIB}` }, true);
  const store = await PostgresStore.connect({ url, poolSize: 8, applicationName: 'waymark-bench-parked' });
  const engine = new RunEngine({ store, registry: new Registry().register(park), holder: `bench-parked:${process.pid}`, leaseTtlMs: 30_000, logger: pino({ level: 'warn' }) });
  const figures: ParkedFigure[] = [];
  try {
    let created = 0;
    for (const target of counts) {
      const started = Date.now();
      const CONCURRENCY = 16;
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        while (created < target) {
          const n = created++;
          await engine.runStart({ namespace: 'bench-parked', workflowName: park.name, input: { n } });
        }
      }));
      for (;;) {
        const { rows } = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE namespace = 'bench-parked' AND status = 'SUSPENDED'`);
        if (rows[0]!.n >= target) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const parkPerSec = (target - (figures.at(-1)?.parked ?? 0)) / ((Date.now() - started) / 1000);
      progress(`parked: ${target} runs parked (${Math.round(parkPerSec)}/s); settling ${SETTLE_MS / 1000} s, then measuring ${HOLD_MS / 1000} s`);
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const before = processCpuMs(server.pid);
      await new Promise((r) => setTimeout(r, HOLD_MS));
      figures.push({ parked: target, rssMiB: rssMiB(server.pid), cores: (processCpuMs(server.pid) - before) / HOLD_MS, parkPerSec });
    }
    return figures;
  } finally {
    await store.close();
    await server.stop();
  }
}

await runAlone(import.meta.url, async (db) => {
  const counts = process.argv.slice(2).map(Number);
  const figures = await measureParked(await db.create('bench_parked'), counts.length ? counts : [1_000, 100_000], (m) => console.error(m));
  for (const f of figures) console.log(`${f.parked} parked: server RSS ${f.rssMiB.toFixed(0)} MiB, idle CPU ${f.cores.toFixed(3)} cores (parked at ${f.parkPerSec.toFixed(0)} runs/s)`);
});
