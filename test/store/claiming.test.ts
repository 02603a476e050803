import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Lease } from '../../src/journal/run.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * Concurrent claimers and sweepers, each a separate PostgresStore (its own pool), over one table.
 * A claim query without SKIP LOCKED double-claimed 1,200-1,350 of 2,000 runs in the research
 * (reliability.md §2.7); here every run must be taken exactly once.
 */

const INTERRUPTED = { name: 'Interrupted', message: 'Interrupted: the run was ready to continue, but every attempt to resume it failed' };
let db: MigratedDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createMigratedDatabase();
  admin = db.admin;
});

afterAll(async () => {
  await db?.drop();
});

beforeEach(async () => {
  await admin.query('TRUNCATE runs, journal, suspension_deadlines CASCADE');
});

async function stores(n: number): Promise<PostgresStore[]> {
  return Promise.all(Array.from({ length: n }, (_, i) =>
    PostgresStore.connect({ url: db.url, poolSize: 3, applicationName: `claimer-${i}` })));
}

/** Inserts `count` runs in one statement; `extra` sets columns for the state under test. */
async function seedRuns(count: number, extra: string): Promise<void> {
  await admin.query(`INSERT INTO runs (id, namespace, workflow_name, workflow_version, workflow_digest, status, input,
      lease_holder, lease_expires_at, lease_epoch, recovery_count, created_at)
    SELECT gen_random_uuid(), 'default', 'w', '1', 'd', s.status, 'null', s.holder, s.expires, s.epoch, s.recoveries,
           now() - interval '1 hour' + g * interval '1 millisecond'
    FROM generate_series(1, $1) g, LATERAL (SELECT ${extra}) s`, [count]);
}

function duplicates(ids: string[]): number {
  return ids.length - new Set(ids).size;
}

describe('runClaim under concurrency', () => {
  for (const claimers of [2, 4]) {
    it(`${claimers} claimers over 2,000 PENDING runs: each claimed exactly once`, async () => {
      await seedRuns(2_000, `'PENDING' AS status, NULL AS holder, NULL::timestamptz AS expires, 0 AS epoch, 0 AS recoveries`);
      const all = await stores(claimers);
      try {
        const started = performance.now();
        const perClaimer = await Promise.all(all.map(async (store, i) => {
          const mine: Lease[] = [];
          for (;;) {
            const batch = await store.runClaim({ holder: `claimer-${i}`, ttlMs: 60_000, limit: 50 });
            if (batch.length === 0) return mine;
            mine.push(...batch);
          }
        }));
        const ms = performance.now() - started;
        const ids = perClaimer.flat().map((l) => l.runId);
        console.log(`runClaim: ${claimers} claimers took 2,000 runs in ${ms.toFixed(0)} ms ` +
          `(${Math.round(2_000 / (ms / 1000))} runs/s; split ${perClaimer.map((c) => c.length).join('/')})`);
        expect(duplicates(ids)).toBe(0);
        expect(ids).toHaveLength(2_000);
        expect(perClaimer.flat().every((l) => l.epoch === 1)).toBe(true);
        const { rows } = await admin.query<{ status: string; epoch: string; n: number }>(
          `SELECT status, lease_epoch AS epoch, count(*)::int AS n FROM runs GROUP BY 1, 2`);
        expect(rows).toEqual([{ status: 'RUNNING', epoch: '1', n: 2_000 }]);
      } finally {
        await Promise.all(all.map((s) => s.close()));
      }
    });
  }
});

describe('runRecoverExpired under concurrency', () => {
  it('3 sweepers over 500 expired runs: recovered or failed exactly once, none missed', async () => {
    // 400 recoverable (count 0) and 100 on their last chance (count 3 = maxRecoveries).
    await seedRuns(400, `'RUNNING' AS status, 'gone' AS holder, now() - interval '1 minute' AS expires, 1 AS epoch, 0 AS recoveries`);
    await seedRuns(100, `'RUNNING' AS status, 'gone' AS holder, now() - interval '1 minute' AS expires, 1 AS epoch, 3 AS recoveries`);
    await seedRuns(50, `'RUNNING' AS status, 'alive' AS holder, now() + interval '1 hour' AS expires, 1 AS epoch, 0 AS recoveries`);
    const all = await stores(3);
    try {
      const started = performance.now();
      const perSweeper = await Promise.all(all.map(async (store) => {
        const recovered: string[] = [];
        const failed: string[] = [];
        for (;;) {
          const r = await store.runRecoverExpired({ limit: 25, maxRecoveries: 3, graceMs: 0, failError: INTERRUPTED });
          if (r.recovered.length + r.failed.length === 0) return { recovered, failed };
          recovered.push(...r.recovered);
          failed.push(...r.failed);
        }
      }));
      const ms = performance.now() - started;
      const recovered = perSweeper.flatMap((s) => s.recovered);
      const failed = perSweeper.flatMap((s) => s.failed);
      console.log(`runRecoverExpired: 3 sweepers handled 500 runs in ${ms.toFixed(0)} ms ` +
        `(split ${perSweeper.map((s) => s.recovered.length + s.failed.length).join('/')})`);
      expect(duplicates([...recovered, ...failed])).toBe(0);
      expect(recovered).toHaveLength(400);
      expect(failed).toHaveLength(100);
      const { rows } = await admin.query<{ status: string; epoch: string; recoveries: number; seq: number; n: number }>(
        `SELECT status, lease_epoch AS epoch, recovery_count AS recoveries, next_seq AS seq, count(*)::int AS n
         FROM runs GROUP BY 1, 2, 3, 4 ORDER BY 1, 3`);
      expect(rows).toEqual([
        { status: 'FAILED', epoch: '2', recoveries: 3, seq: 1, n: 100 },
        { status: 'PENDING', epoch: '2', recoveries: 1, seq: 0, n: 400 },
        { status: 'RUNNING', epoch: '1', recoveries: 0, seq: 0, n: 50 },
      ]);
      const entries = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM journal WHERE kind = 'status' AND name = 'FAILED'`);
      expect(entries.rows[0]!.n).toBe(100);
    } finally {
      await Promise.all(all.map((s) => s.close()));
    }
  });
});

describe('negative control: a claim query without SKIP LOCKED or a re-checked predicate', () => {
  it('double-claims runs under the same load (so the tests above can fail)', async () => {
    await seedRuns(2_000, `'PENDING' AS status, NULL AS holder, NULL::timestamptz AS expires, 0 AS epoch, 0 AS recoveries`);
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: db.url, max: 1 }));
    try {
      const perClaimer = await Promise.all(pools.map(async (pool, i) => {
        const mine: string[] = [];
        for (;;) {
          const { rows } = await pool.query<{ id: string }>(
            `UPDATE runs SET status = 'RUNNING', lease_epoch = lease_epoch + 1, lease_holder = $1, lease_expires_at = now()
             WHERE id IN (SELECT id FROM runs WHERE status = 'PENDING' ORDER BY created_at LIMIT 50) RETURNING id`, [`naive-${i}`]);
          if (rows.length === 0) return mine;
          mine.push(...rows.map((r) => r.id));
        }
      }));
      const ids = perClaimer.flat();
      console.log(`naive claim: ${ids.length} claims of 2,000 runs, ${duplicates(ids)} double`);
      expect(duplicates(ids)).toBeGreaterThan(0);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
