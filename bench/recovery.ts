// Item 7 of the benchmark: recovery. A replica executing runs is SIGKILLed (or frozen with SIGSTOP);
// how long until each of its runs continues on another replica? Real processes: a `waymark sweeper`
// (it turns dead and expired leases back into PENDING runs), replica A executing `bench-crawl` runs,
// replica B idle until A dies. A SIGKILL ends A's database sessions, so its leases are dead at once
// (docs/recovery.md "Dead sessions"); a SIGSTOP keeps them open, as a stalled process or a machine
// that vanished without closing its connections does, so those runs wait for their leases to expire. A run's recovery time is from the kill to the first journal entry replica B wrote for it
// (each step's result names the replica that ran it), on one clock: the kill is taken with
// Date.now() and moved onto the database clock by a measured offset (zero when PostgreSQL runs on
// this machine); the entry's created_at is the database's.
import { fromJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { RunService } from '../src/gen/waymark/v1/run_service_pb.js';
import { startServer, startSweeper, type GrpcServer, type WaymarkChild } from './grpc.js';
import { percentile } from './stats.js';

export interface LeaseSettings {
  leaseTtlMs: number;
  sweepIntervalMs: number;
}

/** The defaults of src/cli/config.ts (WAYMARK_LEASE_TTL_MS, WAYMARK_SWEEP_INTERVAL_MS). */
export const DEFAULT_LEASE: LeaseSettings = { leaseTtlMs: 30_000, sweepIntervalMs: 5_000 };
/** The short lease of the chaos tests. */
export const SHORT_LEASE: LeaseSettings = { leaseTtlMs: 1_500, sweepIntervalMs: 250 };

/** Runs replica A executes when it is killed: one executor's default concurrency. */
export const RUNS_PER_KILL = 16;
/** Steps each run has journaled on A before the kill. */
const STEPS_BEFORE_KILL = 3;
/** More steps than any measurement lasts (at ~20 ms a step): the runs never end on their own. */
const CRAWL_STEPS = 50_000;
const NS = 'bench';

export interface RecoveryResult {
  /** Runs measured, over every kill. */
  runs: number;
  /** From the kill to the run's first journal entry written by B. */
  p50Ms: number;
  p99Ms: number;
  minMs: number;
  maxMs: number;
  /** SIGSTOP only: the part after the run's lease expired (waiting for a sweep, the claim, replay, one step and its append). */
  afterExpiryP50Ms: number;
  afterExpiryP99Ms: number;
}

type Progress = (msg: string) => void;

/**
 * `kills` times: A executes RUNS_PER_KILL runs, B starts, A is SIGKILLed, and each run's recovery
 * time is taken once B journaled a step for it; then the runs are cancelled and B stopped. One
 * sweeper with the same settings serves every kill. Every process is stopped before returning.
 */
export async function measureRecovery(
  databaseUrl: string, lease: LeaseSettings, kills: number, progress: Progress, how: 'SIGKILL' | 'SIGSTOP' = 'SIGKILL',
): Promise<RecoveryResult> {
  const env = { WAYMARK_LEASE_TTL_MS: String(lease.leaseTtlMs), WAYMARK_SWEEP_INTERVAL_MS: String(lease.sweepIntervalMs) };
  const children = new Set<WaymarkChild>();
  const track = <T extends WaymarkChild>(c: T): T => (children.add(c), c);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const samples: number[] = [];
  const afterExpiry: number[] = [];
  try {
    const sweeper = track(await startSweeper(databaseUrl, env)); // first: it applies the migrations
    for (let k = 0; k < kills; k++) {
      const tagA = `A${k}`;
      const tagB = `B${k}`;
      const a = track(await startServer(databaseUrl, { ...env, WAYMARK_BENCH_REPLICA: tagA }));
      const ids = await startRuns(a, lease);
      await waitFor(`runs executing on A`, lease, async () => (await runsWithEntryFrom(pool, ids, tagA, STEPS_BEFORE_KILL)) === ids.length);
      // B's executor is running before A dies, as a replica in service is (not only its listener).
      const b = track(await startServer(databaseUrl, { ...env, WAYMARK_BENCH_REPLICA: tagB }, true));
      const offsetMs = await dbClockOffsetMs(pool);
      const killedAt = how === 'SIGKILL' ? await a.kill() : a.freeze();
      if (how === 'SIGKILL') children.delete(a);
      const killedDbMs = killedAt + offsetMs;
      const expiries = await leaseExpiries(pool, ids); // A is dead or frozen: nobody renews them any more
      await waitFor('runs continuing on B', lease, async () => (await runsWithEntryFrom(pool, ids, tagB, 1)) === ids.length);
      const firsts = await firstEntryFrom(pool, ids, tagB);
      const times = ids.map((id) => firsts.get(id)! - killedDbMs);
      samples.push(...times);
      afterExpiry.push(...ids.map((id) => firsts.get(id)! - expiries.get(id)!));
      progress(`  ${describeLease(lease)}, ${how} ${k + 1}/${kills}: ${ids.length} runs recovered in ${fmtRange(times)} ms`);
      if (how === 'SIGSTOP') {
        await a.kill();
        children.delete(a);
      }
      await cancelRuns(b, ids);
      await waitFor('runs cancelled', lease, async () => (await openRuns(pool, ids)) === 0);
      await b.stop();
      children.delete(b);
    }
    await sweeper.stop();
    children.delete(sweeper);
  } finally {
    for (const c of children) await c.kill();
    await pool.end();
  }
  return {
    runs: samples.length, p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99),
    minMs: Math.min(...samples), maxMs: Math.max(...samples),
    afterExpiryP50Ms: percentile(afterExpiry.filter(Number.isFinite), 50),
    afterExpiryP99Ms: percentile(afterExpiry.filter(Number.isFinite), 99),
  };
}

/**
 * RUNS_PER_KILL runs on A (StartRun without wait: A's executor claims them), spread over one lease
 * renewal period (a third of the TTL), so at the kill their leases are at every point between two
 * renewals, as a replica's runs are in service, rather than all renewed at the same instant.
 */
async function startRuns(a: GrpcServer, lease: LeaseSettings): Promise<string[]> {
  const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${a.address}` }));
  const gap = lease.leaseTtlMs / 3 / RUNS_PER_KILL;
  const ids: string[] = [];
  for (let i = 0; i < RUNS_PER_KILL; i++) {
    const t0 = Date.now();
    const res = await client.startRun({ namespace: NS, workflow: 'bench-crawl', input: fromJson(ValueSchema, { steps: CRAWL_STEPS }) });
    ids.push(res.run!.id);
    const rest = gap - (Date.now() - t0);
    if (rest > 0) await sleep(rest); // spacing only; nothing is timed across it
  }
  return ids;
}

async function cancelRuns(server: GrpcServer, ids: string[]): Promise<void> {
  const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${server.address}` }));
  for (const runId of ids) await client.cancelRun({ namespace: NS, runId, reason: 'recovery measured' });
}

/** Runs of `ids` with at least `min` journal entries written by `replica`. */
async function runsWithEntryFrom(pool: pg.Pool, ids: string[], replica: string, min: number): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT run_id FROM journal WHERE run_id = ANY($1::uuid[]) AND payload->>'replica' = $2
       GROUP BY run_id HAVING count(*) >= $3) r`, [ids, replica, min]);
  return rows[0]!.n;
}

/** Each run's first journal entry written by `replica`: its created_at, in ms since the epoch (database clock). */
async function firstEntryFrom(pool: pg.Pool, ids: string[], replica: string): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ run_id: string; ms: string }>(
    `SELECT run_id, (extract(epoch FROM min(created_at)) * 1000)::text AS ms FROM journal
     WHERE run_id = ANY($1::uuid[]) AND payload->>'replica' = $2 GROUP BY run_id`, [ids, replica]);
  return new Map(rows.map((r) => [r.run_id, Number(r.ms)]));
}

/** Each run's lease expiry, ms since the epoch (database clock). */
async function leaseExpiries(pool: pg.Pool, ids: string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ id: string; ms: string | null }>(
    `SELECT id, (extract(epoch FROM lease_expires_at) * 1000)::text AS ms FROM runs WHERE id = ANY($1::uuid[])`, [ids]);
  return new Map(rows.map((r) => [r.id, r.ms === null ? NaN : Number(r.ms)]));
}

async function openRuns(pool: pg.Pool, ids: string[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`, [ids]);
  return rows[0]!.n;
}

/**
 * Database clock minus this process's clock, in ms: clock_timestamp() against the midpoint of the
 * round trip, the tightest of a few. About zero for a PostgreSQL on this machine (one clock).
 */
async function dbClockOffsetMs(pool: pg.Pool): Promise<number> {
  const client = await pool.connect();
  try {
    let best = { rtt: Infinity, offset: 0 };
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      const { rows } = await client.query<{ ms: string }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000)::text AS ms`);
      const t1 = Date.now();
      if (t1 - t0 < best.rtt) best = { rtt: t1 - t0, offset: Number(rows[0]!.ms) - (t0 + t1) / 2 };
    }
    return best.offset;
  } finally {
    client.release();
  }
}

/**
 * Polls `check` every 50 ms until it holds. The figures come from journal timestamps, not from when
 * a poll noticed, so the poll interval does not enter them. The bound is generous: several lease
 * TTLs and sweep intervals plus a minute for slow process starts.
 */
async function waitFor(what: string, lease: LeaseSettings, check: () => Promise<boolean>): Promise<void> {
  const boundMs = 3 * lease.leaseTtlMs + 3 * lease.sweepIntervalMs + 60_000;
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`recovery bench: ${what}: not done within ${boundMs} ms`);
    await sleep(50);
  }
}

/** "1.5 s TTL, 250 ms sweep", for table labels. */
export const describeLease = (l: LeaseSettings): string => `${l.leaseTtlMs / 1000} s TTL, ${l.sweepIntervalMs < 1000 ? `${l.sweepIntervalMs} ms` : `${l.sweepIntervalMs / 1000} s`} sweep`;

const fmtRange = (ms: number[]) => `${Math.round(Math.min(...ms))}-${Math.round(Math.max(...ms))}`;
