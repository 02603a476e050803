import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWaymarkClient, InvalidArgument } from '../../clients/ts/src/index.js';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, startOperatorServer, storeSnapshot, type CliResult } from './operator-harness.js';

/*
 * `waymark runs purge` and PurgeRuns (docs/operations.md "Purging runs"): the built CLI in a
 * subprocess against a real `waymark server` on PostgreSQL (HTTP/2), and the TypeScript client
 * over the same connection. Runs are aged by backdating their rows (a state, not a wait). A dry
 * run counts and deletes nothing; a purge deletes exactly the finished runs that match its filter,
 * never a parked or recent one, and their runs stay counted in the daily cost roll-up.
 */

type Json = Record<string, any>;

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });
async function json(...args: string[]): Promise<Json[]> {
  const r = await cli(...args, '-o', 'json');
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return jsonLines(r.stdout);
}

async function started(workflow: string): Promise<string> {
  const r = await cli('runs', 'start', workflow, '--input', '{}', '--wait', '-o', 'json');
  return (jsonLines<Json>(r.stdout)[0]!).run.id as string;
}

async function backdate(ids: string[], days: number): Promise<void> {
  await db.admin.query(`UPDATE runs SET updated_at = now() - $2::int * interval '1 day' WHERE id = ANY($1::uuid[])`, [ids, days]);
}

async function existing(ids: string[]): Promise<string[]> {
  const { rows } = await db.admin.query<{ id: string }>('SELECT id::text FROM runs WHERE id = ANY($1::uuid[])', [ids]);
  return rows.map((r) => r.id).sort();
}

async function entries(ids: string[]): Promise<number> {
  const { rows } = await db.admin.query<{ n: number }>('SELECT count(*)::int AS n FROM journal WHERE run_id = ANY($1::uuid[])', [ids]);
  return rows[0]!.n;
}

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_runs_purge');
  ({ server, address } = await startOperatorServer(db));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe('waymark runs purge', { timeout: 180_000 }, () => {
  it('a dry run counts, a purge deletes exactly the matching finished runs, never a parked or recent one', async () => {
    const failedOld = [await started('failing'), await started('failing')];
    const doneOld: string[] = [];
    for (let i = 0; i < 2; i++) {
      const id = await started('await_go');
      expect((await cli('signals', 'send', id, 'go', '--payload', '{"n":1}')).code).toBe(0);
      doneOld.push(id);
    }
    for (const id of doneOld) {
      await expect.poll(async () => (await json('runs', 'get', id))[0]!.run.status, { timeout: 60_000 }).toBe('RUN_STATUS_SUCCEEDED');
    }
    const parked = await started('await_go');
    const recent = await started('failing');
    await backdate([failedOld[0]!, doneOld[0]!], 50);
    await backdate([failedOld[1]!, doneOld[1]!, parked], 40);
    const old = [...failedOld, ...doneOld];
    const oldEntries = await entries(old);

    const before = await storeSnapshot(db);
    const [dry] = await json('runs', 'purge', '--older-than', '30d', '--dry-run');
    expect(dry).toMatchObject({ dryRun: true, rootRuns: '4', runs: '4', entries: String(oldEntries) });
    const { rows: ends } = await db.admin.query<{ oldest: Date; newest: Date }>('SELECT min(updated_at) AS oldest, max(updated_at) AS newest FROM runs WHERE id = ANY($1::uuid[])', [old]);
    expect(new Date(dry!.oldestEndTime as string).getTime()).toBe(ends[0]!.oldest.getTime());
    expect(new Date(dry!.newestEndTime as string).getTime()).toBe(ends[0]!.newest.getTime());
    expect(await storeSnapshot(db)).toEqual(before);
    expect((await cli('runs', 'purge', '--older-than', '30d', '--dry-run')).stdout).toMatch(/^would delete 4 runs \(4 root runs and their children\), \d+ journal entries; ended \S+ to \S+ \(dry run: nothing was deleted\)$/m);

    // By status: the two old failed runs only.
    const byStatus = await cli('runs', 'purge', '--older-than', '30d', '--status', 'FAILED');
    expect(byStatus.code, byStatus.stderr).toBe(0);
    expect(byStatus.stdout).toMatch(/^deleted 2 runs \(2 root runs and their children\), \d+ journal entries; ended /m);
    expect(await existing([...old, parked, recent])).toEqual([...doneOld, parked, recent].sort());

    // By workflow, one root run per call (--limit), then the rest.
    const [one] = await json('runs', 'purge', '--older-than', '30d', '--workflow', 'await_go', '--limit', '1');
    expect(one).toMatchObject({ dryRun: false, rootRuns: '1', runs: '1', more: true });
    expect(await existing(doneOld)).toEqual([doneOld[1]!]); // oldest end first
    const [rest] = await json('runs', 'purge', '--older-than', '30d', '--workflow', 'await_go');
    expect(rest).toMatchObject({ rootRuns: '1', runs: '1' });
    expect(rest!.more ?? false).toBe(false);
    expect(await existing([...old, parked, recent])).toEqual([parked, recent].sort());
    expect(await entries(old)).toBe(0);

    // The parked run, though older than the horizon, and the recent one stay; nothing else matches.
    const [none] = await json('runs', 'purge', '--older-than', '30d');
    expect(none!.runs ?? '0').toBe('0');
    const { rows: rollup } = await db.admin.query<{ workflow_name: string; runs: string }>(
      'SELECT workflow_name, sum(runs)::text AS runs FROM run_cost_daily GROUP BY workflow_name ORDER BY workflow_name');
    expect(rollup).toEqual([{ workflow_name: 'await_go', runs: '2' }, { workflow_name: 'failing', runs: '2' }]);
  });

  it('refuses bad input in one line with exit 2, and the server refuses an unfinished status', async () => {
    const before = await storeSnapshot(db);
    const cases: [string[], RegExp][] = [
      [['runs', 'purge'], /--older-than is required/],
      [['runs', 'purge', '--older-than', 'soon'], /--older-than must be a duration/],
      [['runs', 'purge', '--older-than', '1d', '--status', 'SUSPENDED'], /--status must be one of SUCCEEDED, FAILED, CANCELLED/],
      [['runs', 'purge', '--older-than', '1d', '--limit', '0'], /--limit must be a whole number >= 1/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
    const client = createWaymarkClient({ address });
    try {
      await expect(client.purgeRuns({ olderThanMs: 0, statuses: ['RUNNING'] })).rejects.toThrow(InvalidArgument);
      await expect(client.purgeRuns({ olderThanMs: 0, limit: 10_001 })).rejects.toThrow(/limit/);
      // A horizon past any calendar (the message fuzzer's counterexample): INVALID_ARGUMENT, not INTERNAL.
      await expect(client.purgeRuns({ olderThanMs: 3.9e21 })).rejects.toThrow(InvalidArgument);
      await expect(client.purgeRuns({ olderThanMs: 36_501 * 86_400_000 })).rejects.toThrow(/older_than.*at most 36500 days/);
      expect((await client.purgeRuns({ olderThanMs: 36_500 * 86_400_000, dryRun: true })).runs).toBe(0n);
      expect((await client.purgeRuns({ olderThanMs: 0, dryRun: true })).dryRun).toBe(true);
    } finally {
      client.close();
    }
    expect(await storeSnapshot(db)).toEqual(before);
  });
});
