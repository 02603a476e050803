import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEntry } from '../../src/journal/journal-entry.js';
import { migrate } from '../../src/store/postgres/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { chaosEnv, Driver, kill, size, startSweeper } from './support/cluster.js';

/*
 * Several sweepers over one store (reliability.md §4.4), as real processes: exactly one leads and
 * acts, no run is recovered twice or missed, every due deadline gets exactly one resolution, every
 * waiting parent is woken once, every orphan is cancelled once. Then the leader is SIGKILLed and a
 * standby takes over within about one leader lease.
 */

const EXPIRED = size(500, 500);
const APPROVALS = size(50, 100);
const PARENTS = size(25, 50);
const ORPHANS = size(25, 50);
const TTL = 30_000;

let db: TestDatabase;
let driver: Driver;
let sweepers: WaymarkProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_chaos_sweepers');
  driver = await Driver.open(db.url);
  await migrate({ pool: driver.pool });
});

afterAll(async () => {
  await Promise.all(sweepers.map((s) => s.stop()));
  await driver?.close();
  await db?.drop();
});

/**
 * `count` RUNNING runs whose lease expired a moment ago, owned by a dead worker, created long ago.
 * Expired with the database up (not before it started), so the recovery counts (docs/recovery.md
 * "Database outages").
 */
async function seedExpired(count: number, tag: string): Promise<string[]> {
  const { rows } = await driver.pool.query<{ id: string }>(`INSERT INTO runs (id, namespace, workflow_name, workflow_version,
      workflow_digest, status, input, lease_holder, lease_expires_at, lease_epoch, created_at)
    SELECT gen_random_uuid(), 'default', 'chaos-pair', '1', 'd', 'RUNNING', jsonb_build_object('tag', $2::text), 'gone',
      clock_timestamp() - interval '1 millisecond', 1, now() - interval '1 hour'
    FROM generate_series(1, $1) RETURNING id`, [count, tag]);
  return rows.map((r) => r.id);
}

const lease = { holder: 'seeder', ttlMs: TTL };
const base = { namespace: 'default', workflowVersion: '1', workflowDigest: 'd', input: {} };

async function seedParkedApproval(): Promise<string> {
  const { run, lease: l } = await driver.store.runCreate({ ...base, workflowName: 'w', leaseFor: lease });
  await driver.store.journalAppend({ lease: l!, entries: [newEntry({
    kind: 'approval', name: 'ok?', status: 'suspended', contentKey: 'ck', payload: { deadlineAt: new Date(Date.now() - 60_000).toISOString(), onTimeout: { approved: false } },
  })] });
  await driver.store.runStatusSet({ lease: l!, status: 'SUSPENDED' });
  return run.id;
}

/** A parent parked on a child; `end` decides what happens next without the engine's own follow-up. */
async function seedFamily(end: 'child-succeeds' | 'parent-cancelled'): Promise<{ parent: string; child: string }> {
  const p = await driver.store.runCreate({ ...base, workflowName: 'parent', leaseFor: lease });
  const [wait] = await driver.store.journalAppend({ lease: p.lease!, entries: [newEntry({ kind: 'child', name: 'kid', status: 'suspended', contentKey: 'ck' })] });
  await driver.store.runStatusSet({ lease: p.lease!, status: 'SUSPENDED' });
  const c = await driver.store.runCreate({
    ...base, workflowName: 'kid', parentRunId: p.run.id, parentSeq: wait!.seq, ...(end === 'child-succeeds' ? { leaseFor: lease } : {}),
  });
  if (end === 'child-succeeds') await driver.store.runStatusSet({ lease: c.lease!, status: 'SUCCEEDED', output: 'ok' });
  else await driver.store.runStatusForce({ runId: p.run.id, status: 'CANCELLED' });
  return { parent: p.run.id, child: c.run.id };
}

async function count(sql: string, values: unknown[]): Promise<number> {
  return (await driver.pool.query<{ n: number }>(sql, values)).rows[0]!.n;
}

/** Every run id any sweeper logged as recovered, with repeats. */
function recoveredInLogs(procs: WaymarkProcess[]): string[] {
  return procs.flatMap((p) => p.logs.filter((l) => l.msg === 'sweep acted').flatMap((l) => l.recovered as string[]));
}

describe('three sweepers at once', () => {
  it(`${EXPIRED} expired runs, ${APPROVALS} due deadlines, ${PARENTS} waiting parents, ${ORPHANS} orphans: exactly one leader acts, each once`, async () => {
    const expired = await seedExpired(EXPIRED, 'phase1');
    const approvals = await Promise.all(Array.from({ length: APPROVALS }, () => seedParkedApproval()));
    const parents = await Promise.all(Array.from({ length: PARENTS }, () => seedFamily('child-succeeds')));
    const orphans = await Promise.all(Array.from({ length: ORPHANS }, () => seedFamily('parent-cancelled')));
    // Families need their grace period (the lease TTL) behind them; backdate rather than wait.
    await driver.pool.query(`UPDATE runs SET updated_at = updated_at - interval '1 hour', created_at = created_at - interval '1 hour'`);

    const started = Date.now();
    sweepers = await Promise.all([1, 2, 3].map(() => startSweeper(chaosEnv(db.url))));
    const allIds = [...expired, ...approvals, ...parents.map((f) => f.parent), ...orphans.map((f) => f.child)];
    // Done when the database says so and the sweepers' log lines (written after each commit) are in.
    await driver.waitUntil(async () => (await count(
      `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND status NOT IN ('PENDING', 'CANCELLED')`, [allIds])) === 0 &&
      new Set(recoveredInLogs(sweepers)).size >= EXPIRED, 60_000);
    const elapsed = Date.now() - started;

    const logged = recoveredInLogs(sweepers);
    const doubleRecoveries = logged.length - new Set(logged).size;
    const missed = expired.filter((id) => !logged.includes(id)).length;
    const actors = sweepers.filter((p) => p.logs.some((l) => l.msg === 'sweep acted')).length;
    const leaders = sweepers.filter((p) => p.logs.some((l) => l.msg === 'sweeper leader lease acquired')).length;
    const recoveryCounts = await count(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND (recovery_count <> 1 OR lease_epoch <> 2)`, [expired]);
    const doubleResolutions = await count(`SELECT count(*)::int AS n FROM (SELECT run_id, ref_seq FROM journal WHERE run_id = ANY($1::uuid[])
      AND status IN ('resolved', 'noop') GROUP BY run_id, ref_seq HAVING count(*) <> 1) x`, [[...approvals, ...parents.map((f) => f.parent)]]);
    const unresolved = await count(`SELECT count(*)::int AS n FROM unnest($1::uuid[]) r(id) WHERE NOT EXISTS
      (SELECT 1 FROM journal j WHERE j.run_id = r.id AND j.status = 'resolved')`, [[...approvals, ...parents.map((f) => f.parent)]]);
    const cancelEntries = await count(`SELECT count(*)::int AS n FROM journal WHERE run_id = ANY($1::uuid[]) AND kind = 'status' AND name = 'CANCELLED'`,
      [orphans.map((f) => f.child)]);
    console.log(`chaos: sweepers=3 expired=${EXPIRED} double_recoveries=${doubleRecoveries} missed=${missed} leaders_acting=${actors} ` +
      `deadlines=${APPROVALS} parents=${PARENTS} orphans=${ORPHANS} double_resolutions=${doubleResolutions} unresolved=${unresolved} ` +
      `orphans_cancelled_once=${cancelEntries === ORPHANS} all_done_ms=${elapsed}`);
    expect({ doubleRecoveries, missed, actors, leaders, recoveryCounts, doubleResolutions, unresolved })
      .toEqual({ doubleRecoveries: 0, missed: 0, actors: 1, leaders: 1, recoveryCounts: 0, doubleResolutions: 0, unresolved: 0 });
    expect(cancelEntries).toBe(ORPHANS);

    // Failover: the leader dies; a standby takes over and recovers new work, alone.
    const leader = sweepers.find((p) => p.logs.some((l) => l.msg === 'sweep acted'))!;
    await kill(leader);
    const standbys = sweepers.filter((p) => p !== leader);
    const more = await seedExpired(100, 'phase2');
    await driver.waitUntil(async () => (await count(`SELECT count(*)::int AS n FROM runs WHERE id = ANY($1::uuid[]) AND status = 'PENDING'`, [more])) === 100 &&
      new Set(recoveredInLogs(standbys).filter((id) => more.includes(id))).size >= 100, 60_000);
    const second = recoveredInLogs(standbys).filter((id) => more.includes(id));
    const newLeaders = standbys.filter((p) => p.logs.some((l) => l.msg === 'sweeper leader lease acquired')).length;
    console.log(`chaos: sweepers failover recovered=${second.length} double_recoveries=${second.length - new Set(second).size} new_leaders=${newLeaders}`);
    expect(second.length).toBe(100);
    expect(new Set(second).size).toBe(100);
    expect(newLeaders).toBe(1);
  }, 180_000);
});
