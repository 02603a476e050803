import { Writable } from 'node:stream';
import type pg from 'pg';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { Sweeper } from '../../src/sweeper/sweeper.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';

/*
 * Retention on a real PostgreSQL while runs are being written (issue 35 "Must show"): the sweeper
 * deletes exactly the finished run trees past the horizon, never a parked, pending, running or
 * recent run; writers running meanwhile lose nothing; and nobody waits on a lock held by the purge.
 * Lock waits are sampled from pg_stat_activity with pg_blocking_pids, so a writer blocked by a
 * retention backend is seen whoever it is; the purge's own waits are bounded by its lock_timeout,
 * and a batch that hit it would log "retention batch failed" (none may).
 */

const DAY = 86_400_000;
const TTL = 30_000;
const OLD_FINISHED = 240;
const OLD_TREES = 20;
const OLD_UNFINISHED = 30;
const WRITERS = 4;

let db: MigratedDatabase;
let admin: pg.Pool;

beforeAll(async () => {
  db = await createMigratedDatabase(undefined, 4);
  admin = db.admin;
});

afterAll(async () => {
  await db?.drop();
});

const params = (workflowName: string) => ({ namespace: 'default', workflowName, workflowVersion: '1', workflowDigest: 'd', input: { n: 1 } });
const steps = (n: number) => Array.from({ length: n }, (_, i) => newEntry({ kind: 'step', name: `s${i}`, status: 'ok', contentKey: `ck:${i}`, payload: { i, pad: 'x'.repeat(200) } }));

describe('retention under load (PostgreSQL)', () => {
  it('deletes exactly the finished trees past the horizon while writers run, with no writer waiting on it and nothing lost', async () => {
    const seeder = await PostgresStore.connect({ url: db.url, poolSize: 4, applicationName: 'seed' });
    const old = new Set<string>();
    const kept = new Map<string, number>(); // old unfinished run -> its entry count
    for (let i = 0; i < OLD_FINISHED; i++) {
      const { lease } = await seeder.runCreate({ ...params('old'), leaseFor: { holder: 'seed', ttlMs: TTL } });
      await seeder.journalAppend({ lease: lease!, entries: steps(5) });
      await seeder.runStatusSet({ lease: lease!, status: i % 7 === 0 ? 'FAILED' : 'SUCCEEDED', ...(i % 7 === 0 ? { error: { name: 'E', message: 'm' } } : { output: i }) });
      old.add(lease!.runId);
    }
    for (let i = 0; i < OLD_TREES; i++) {
      const { lease } = await seeder.runCreate({ ...params('tree'), leaseFor: { holder: 'seed', ttlMs: TTL } });
      await seeder.journalAppend({ lease: lease!, entries: steps(2) });
      for (let c = 0; c < 2; c++) {
        const { lease: kid } = await seeder.runCreate({ ...params('kid'), parentRunId: lease!.runId, parentSeq: 0, leaseFor: { holder: 'seed', ttlMs: TTL } });
        await seeder.runStatusSet({ lease: kid!, status: 'SUCCEEDED', output: c });
        old.add(kid!.runId);
      }
      await seeder.runStatusSet({ lease: lease!, status: 'SUCCEEDED', output: null });
      old.add(lease!.runId);
    }
    for (let i = 0; i < OLD_UNFINISHED; i++) {
      const { run, lease } = await seeder.runCreate({ ...params('parked'), ...(i % 3 === 2 ? {} : { leaseFor: { holder: 'seed', ttlMs: TTL } }) });
      if (lease) {
        await seeder.journalAppend({ lease, entries: [...steps(3), newEntry({ kind: 'approval', name: 'ok?', status: 'suspended', contentKey: `ck:approval:${i}` })] });
        if (i % 3 === 0) await seeder.runStatusSet({ lease, status: 'SUSPENDED' });
      }
      kept.set(run.id, lease ? (i % 3 === 0 ? 5 : 4) : 0); // a parked run has its status entry too
    }
    // A finished child whose parent is still running: old, but its tree has not ended.
    const { lease: liveParent } = await seeder.runCreate({ ...params('live-parent'), leaseFor: { holder: 'seed', ttlMs: TTL } });
    const { lease: endedKid } = await seeder.runCreate({ ...params('kid'), parentRunId: liveParent!.runId, parentSeq: 0, leaseFor: { holder: 'seed', ttlMs: TTL } });
    await seeder.runStatusSet({ lease: endedKid!, status: 'SUCCEEDED', output: 1 });
    kept.set(liveParent!.runId, 0);
    kept.set(endedKid!.runId, 1);
    await admin.query(`UPDATE runs SET updated_at = updated_at - interval '31 days', created_at = created_at - interval '31 days'`);
    await admin.query('ANALYZE');
    await seeder.close();

    // Writers: new runs, appended to and ended (or parked) throughout the purge.
    const writers = await PostgresStore.connect({ url: db.url, poolSize: WRITERS + 2, applicationName: 'writer' });
    const written = new Map<string, { entries: number; status: string }>();
    let stop = false;
    const writer = async (w: number) => {
      for (let i = 0; !stop; i++) {
        const { lease } = await writers.runCreate({ ...params('new'), leaseFor: { holder: `w${w}`, ttlMs: TTL } });
        await writers.journalAppend({ lease: lease!, entries: steps(2) });
        await writers.journalAppend({ lease: lease!, entries: steps(2).map((e) => ({ ...e, contentKey: `${e.contentKey}:b` })) });
        const status = i % 4 === 0 ? 'SUSPENDED' : 'SUCCEEDED';
        await writers.runStatusSet({ lease: lease!, status, ...(status === 'SUCCEEDED' ? { output: i } : {}) });
        written.set(lease!.runId, { entries: 5, status }); // four steps and the status entry
      }
    };

    // Lock waits of every backend of this database, with the applications blocking them.
    const samples: { app: string; waitedMs: number; blockers: string[] }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await admin.query<{ app: string; waited_ms: number; blockers: string[] }>(`
          SELECT a.application_name AS app, extract(epoch FROM clock_timestamp() - a.query_start) * 1000 AS waited_ms,
            ARRAY(SELECT b.application_name FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))) AS blockers
          FROM pg_stat_activity a WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'`);
        for (const r of rows) samples.push({ app: r.app, waitedMs: Number(r.waited_ms), blockers: r.blockers });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    const lines: { msg: string; purged?: number }[] = [];
    const logger = pino({ level: 'info' }, new Writable({ write(chunk: Buffer, _e, done) { lines.push(JSON.parse(chunk.toString()) as { msg: string }); done(); } }));
    const sweeperStore = await PostgresStore.connect({ url: db.url, poolSize: 2, applicationName: 'retention', sweeperLockTimeoutMs: 200 });
    const sweeper = new Sweeper({ store: sweeperStore, holder: 'retention-sweeper', intervalMs: 60_000, maxBatches: 3, retention: { defaultMs: 30 * DAY, namespaces: {}, batchSize: 10 }, logger });
    const running = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const started = performance.now();
    let purged = 0;
    let sweeps = 0;
    for (;;) {
      const report = await sweeper.sweepOnce();
      sweeps++;
      purged += report.purged;
      if (report.purged === 0) break;
    }
    const purgeMs = performance.now() - started;
    stop = true;
    await Promise.all(running);
    sampling = false;
    await sampler;
    await sweeper.stop();

    // Exactly the old finished trees went, in several sweeps of small batches.
    expect(purged).toBe(old.size);
    expect(sweeps).toBeGreaterThan(3);
    const { rows: left } = await admin.query<{ id: string }>('SELECT id::text FROM runs');
    const leftIds = new Set(left.map((r) => r.id));
    for (const id of old) expect(leftIds.has(id), `old finished run ${id} was kept`).toBe(false);
    for (const [id, entries] of kept) {
      expect(leftIds.has(id), `unfinished or live-tree run ${id} was deleted`).toBe(true);
      expect((await admin.query('SELECT 1 FROM journal WHERE run_id = $1', [id])).rowCount).toBe(entries);
    }
    // Nothing the writers wrote meanwhile was lost: every run, status and entry is there.
    expect(written.size).toBeGreaterThan(WRITERS);
    const { rows: counts } = await admin.query<{ id: string; status: string; n: number }>(
      `SELECT r.id::text, r.status, (SELECT count(*)::int FROM journal j WHERE j.run_id = r.id) AS n FROM runs r WHERE r.id = ANY($1::uuid[])`, [[...written.keys()]]);
    expect(new Map(counts.map((r) => [r.id, { entries: r.n, status: r.status }]))).toEqual(written);
    expect((await admin.query('SELECT 1 FROM journal WHERE run_id <> ALL($1::uuid[])', [[...leftIds]])).rowCount).toBe(0);
    // The cost ledger counted each purged run once.
    expect(Number((await admin.query<{ n: string }>('SELECT sum(runs) AS n FROM run_cost_daily')).rows[0]!.n)).toBe(old.size);

    // No backend ever waited on a lock the purge held, and no purge batch hit its lock_timeout.
    const blockedByPurge = samples.filter((s) => s.blockers.some((b) => b.startsWith('retention')));
    expect(blockedByPurge).toEqual([]);
    expect(lines.filter((l) => l.msg.startsWith('retention batch failed'))).toEqual([]);
    const writerWaits = samples.filter((s) => s.app.startsWith('writer'));
    console.log(`retention under load: purged ${purged} runs in ${sweeps} sweeps (${purgeMs.toFixed(0)} ms) while ${WRITERS} writers wrote ${written.size} runs; ` +
      `lock-wait samples: ${samples.length} (writers ${writerWaits.length}, max ${Math.max(0, ...writerWaits.map((s) => s.waitedMs)).toFixed(1)} ms), blocked by the purge: ${blockedByPurge.length}; blockers seen: ${[...new Set(samples.flatMap((s) => s.blockers))].join(', ') || 'none'}`);
    await Promise.all([writers.close(), sweeperStore.close()]);
  }, 240_000);
});
