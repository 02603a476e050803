// Storage (issue 35): what a finished run costs PostgreSQL, and what retention gives back. Runs of
// bench-ten-steps are executed in process; then the rows and bytes of every table and the WAL
// written per step (pg_current_wal_lsn around the runs), and the bytes per run before and after
// the runs are purged (backdated past the horizon, store.runPurge in batches, VACUUM FULL so the
// figure is the space really held). Alone: `node --import tsx bench/storage.ts [runs]`.
import pg from 'pg';
import { pino } from 'pino';
import { Registry } from '../src/engine/registry.js';
import { RunEngine } from '../src/engine/run-engine.js';
import { migrate } from '../src/store/postgres/migrate.js';
import { PostgresStore } from '../src/store/postgres/postgres-store.js';
import { STEPS, tenSteps } from './workflows.js';
import { runAlone } from './postgres.js';

export interface StorageFigure {
  runs: number; steps: number; entriesPerRun: number;
  bytesPerRun: number; bytesPerStep: number; walBytesPerStep: number;
  bytesPerRunAfterPurge: number; purgedPerSec: number;
}

const TABLES = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r' AND n.nspname = current_schema()`;

export async function measureStorage(url: string, runs: number): Promise<StorageFigure> {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  await migrate({ pool: admin });
  const store = await PostgresStore.connect({ url, poolSize: 8, applicationName: 'waymark-bench-storage' });
  const engine = new RunEngine({ store, registry: new Registry().register(tenSteps), holder: `bench-storage:${process.pid}`, leaseTtlMs: 30_000, logger: pino({ level: 'warn' }) });
  const bytes = async () => Number((await admin.query<{ bytes: string }>(TABLES)).rows[0]!.bytes);
  const lsn = async () => (await admin.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]!.lsn;
  try {
    await admin.query('VACUUM FULL');
    const emptyBytes = await bytes();
    const walBefore = await lsn();
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < runs) {
        const i = next++;
        const { execution } = await engine.runStart({ namespace: 'bench', workflowName: tenSteps.name, input: { n: i }, execute: true });
        if (execution?.outcome !== 'succeeded') throw new Error(`bench run ended ${execution?.outcome}`);
      }
    }));
    const walBytes = Number((await admin.query<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::bigint AS d', [walBefore])).rows[0]!.d);
    const entries = Number((await admin.query<{ n: string }>('SELECT count(*) AS n FROM journal')).rows[0]!.n);
    await admin.query('VACUUM FULL');
    const fullBytes = await bytes();
    await admin.query(`UPDATE runs SET updated_at = updated_at - interval '31 days'`);
    const started = performance.now();
    let purged = 0;
    for (;;) {
      const r = await store.runPurge({ olderThanMs: 30 * 86_400_000, limit: 50 });
      purged += r.runIds.length;
      if (r.roots.length < 50) break;
    }
    const purgeSec = (performance.now() - started) / 1000;
    await admin.query('VACUUM FULL');
    const afterBytes = await bytes();
    return {
      runs, steps: STEPS, entriesPerRun: entries / runs,
      bytesPerRun: (fullBytes - emptyBytes) / runs, bytesPerStep: (fullBytes - emptyBytes) / (runs * STEPS), walBytesPerStep: walBytes / (runs * STEPS),
      bytesPerRunAfterPurge: (afterBytes - emptyBytes) / runs, purgedPerSec: purged / purgeSec,
    };
  } finally {
    await store.close();
    await admin.end();
  }
}

await runAlone(import.meta.url, async (db) => {
  const f = await measureStorage(await db.create('bench_storage'), Number(process.argv[2] ?? 2_000));
  console.log(JSON.stringify(f, null, 2));
});
