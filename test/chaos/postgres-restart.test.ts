import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureDatabase, startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/cli/embedded-postgres.js';
import { journalFollow } from '../../src/store/journal-follow.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { EffectSink } from './support/effect-sink.js';
import { chaosEnv, Driver, size, startServer, startSweeper } from './support/cluster.js';

/*
 * PostgreSQL restarted three times while runs execute (reliability.md §4.6). The harness's shared
 * Postgres serves every test file, so this test starts its own on a private data directory and
 * restarts it on the same port. Restarts are triggered by progress (a share of the expected
 * effects reached the sink), not by time. Every run must finish, no effect may be applied twice or
 * lost, and followers of the journal (what StreamRunEvents uses) must see every entry, in order.
 */

const RUNS = size(40, 200);
const RESTARTS = 3;
const OUTAGE_MS = 300; // injected downtime between stop and start (the fault, not a wait for a state)
/*
 * The subject here is the database going away, not how tight a lease can be: the other chaos tests
 * use 1.5 s leases to make takeovers quick, and on a loaded machine (CI runs files in parallel) a
 * replica starved of CPU for that long loses leases with the database up, which counts towards the
 * 3 recoveries that fail a run (docs/recovery.md "Database outages"). 5 s leases keep those
 * expiries out of this test while each restart still cuts every lease off.
 */
const ENV = { WAYMARK_LEASE_TTL_MS: '5000' };

let dir: string;
let pg: EmbeddedPostgresHandle;
let port: number;
let url: string;
let sink: EffectSink;
const processes: WaymarkProcess[] = [];

async function startPg(): Promise<void> {
  pg = await startEmbeddedPostgres({ dataDir: dir, port, persistent: true });
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'waymark-chaos-pg-'));
  port = 0;
  await startPg();
  port = Number(new URL(pg.url).port);
  await ensureDatabase(pg.url, 'chaos');
  url = pg.urlFor('chaos');
  sink = await EffectSink.start();
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop()));
  await sink?.close();
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
}, 120_000);

describe('Postgres restarted during a run', () => {
  it(`${RESTARTS} restarts during ${RUNS} runs: every run finishes, nothing doubled or lost, no stream gap`, async () => {
    processes.push(await startSweeper(chaosEnv(url, ENV))); // migrates
    processes.push(await startSweeper(chaosEnv(url, ENV)));
    const driver = await Driver.open(url);
    try {
      const expected: string[] = [];
      const ids: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const tag = `p${i}`;
        const approval = i % 5 === 0;
        const child = i % 10 === 3;
        ids.push(await driver.start('chaos-soak', { sink: sink.url, tag, approval, child }));
        expected.push(`${tag}:a`, `${tag}:b`, `${tag}:c`, ...(child ? [`${tag}:kid`] : []));
      }
      // Followers on a sample of runs, started before anything executes, kept across the restarts.
      const abort = new AbortController();
      const sample = ids.filter((_, i) => i % 4 === 0);
      const followed = sample.map(async (runId) => {
        const seqs: number[] = [];
        for await (const e of journalFollow({ store: driver.store, runId, signal: abort.signal, pollMs: 250, stopAfterTerminal: true })) seqs.push(e.seq);
        return { runId, seqs };
      });
      processes.push(...await Promise.all([1, 2].map(() => startServer(chaosEnv(url, ENV)))));

      const reconnectMs: number[] = [];
      // Each stage says when it ended, so a failure shows where progress stopped; the waits add up
      // to less than the test's timeout, so the diagnosis below always prints.
      const t0 = Date.now();
      const stage = (what: string) => console.log(`chaos: pg-restart +${Date.now() - t0} ms ${what} (deliveries ${sink.deliveries.length}/${expected.length})`);
      let ended: unknown = null;
      try {
        for (let r = 1; r <= RESTARTS; r++) {
          const threshold = Math.floor((expected.length * r) / (RESTARTS + 1));
          await sink.waitFor(() => sink.deliveries.length >= threshold, 60_000);
          stage(`restart ${r}: stopping postgres`);
          await pg.stop();
          await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
          await startPg();
          stage(`restart ${r}: postgres up`);
          const upAt = Date.now();
          const before = sink.deliveries.length;
          // Runs may all have finished their effects before this restart (fast runs); then there is
          // no next delivery to time, and waiting for one would only run into the timeout.
          const allDelivered = () => new Set(sink.deliveries.map((d) => d.effect)).size >= expected.length;
          if (!allDelivered()) {
            await sink.waitFor(() => sink.deliveries.length > before, 60_000).catch(() => undefined);
            reconnectMs.push(Date.now() - upAt);
          }
        }
        await driver.waitEnded(ids, 150_000);
        stage('every run ended');
      } catch (err) {
        stage(`stopped: ${(err as Error).message}`);
        ended = err;
      }

      const statuses = await driver.statuses(ids);
      if (statuses.FAILED || ended) {
        const { rows: open } = await driver.pool.query(`SELECT r.id, r.status, r.lease_holder, r.lease_expires_at > now() AS lease_live, r.recovery_count,
            (SELECT jsonb_agg(jsonb_build_array(j.seq, j.kind, j.name, j.status) ORDER BY j.seq) FROM journal j WHERE j.run_id = r.id AND j.seq >= r.next_seq - 4) AS tail
          FROM runs r WHERE r.id = ANY($1::uuid[]) AND r.status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`, [ids]);
        console.log(`chaos: pg-restart open runs ${JSON.stringify(open)}`);
        // Whether a replica or sweeper died (runs nobody claims, reported unroutable) and what it said last.
        console.log(`chaos: pg-restart processes ${JSON.stringify(processes.map((p) => ({
          pid: p.child.pid, exit: p.child.exitCode ?? p.child.signalCode, stderr: p.stderr.slice(-600),
        })))}`);
        const { rows } = await driver.pool.query(`SELECT id, error, recovery_count FROM runs WHERE id = ANY($1::uuid[]) AND status = 'FAILED'`, [ids]);
        console.log(`chaos: pg-restart failed runs ${JSON.stringify(rows)}`);
        const warnings = new Map<string, number>();
        for (const l of processes.flatMap((p) => p.logs)) {
          if (typeof l.level === 'string' ? ['warn', 'error', 'fatal'].includes(l.level) : Number(l.level) >= 40) {
            const err = (l as { err?: { message?: string } }).err?.message ?? '';
            const key = `${String(l.msg)} ${err.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, '<id>').replace(/:\d{4,5}\b/g, ':<port>')}`;
            warnings.set(key, (warnings.get(key) ?? 0) + 1);
          }
        }
        console.log(`chaos: pg-restart warnings ${JSON.stringify([...warnings])}`);
      }
      if (ended) throw ended;
      const figures = sink.figures(expected, 'p');
      const journal = await driver.journalViolations(ids);
      const streams = await Promise.all(followed);
      let streamGaps = 0;
      for (const { runId, seqs } of streams) {
        const entries = await driver.store.journalList({ runId });
        if (seqs.join(',') !== entries.map((e) => e.seq).join(',') || seqs.some((s, i) => s !== i)) streamGaps++;
      }
      abort.abort();
      console.log(`chaos: pg-restart restarts=${RESTARTS} runs=${RUNS} completed=${statuses.SUCCEEDED ?? 0}/${RUNS} ` +
        `duplicates=${figures.duplicates} lost=${figures.lost} redundant_deliveries=${figures.redundant} stream_gaps=${streamGaps}/${streams.length} ` +
        `journal_gaps=${journal.gaps} reconnect_ms=${reconnectMs.join('/')}`);
      expect(statuses).toEqual({ SUCCEEDED: RUNS });
      expect(figures).toMatchObject({ duplicates: 0, lost: 0, unkeyed: 0 });
      expect(journal).toEqual({ gaps: 0, doubleTerminals: 0, orphanTerminals: 0 });
      expect(streamGaps).toBe(0);
    } finally {
      await driver.close();
    }
  }, 400_000);
});
