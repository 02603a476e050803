import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, startOperatorServer, type CliResult } from './operator-harness.js';

/*
 * `waymark schedules …` (src/cli/client/schedules-commands.ts) as the CLI in a subprocess against a
 * real `waymark server` and `waymark sweeper` on Postgres: create, get, list, update one field,
 * pause, unpause, trigger (the sweeper starts the run; `runs list --schedule` and `runs get` show
 * it), backfill, delete; bad input refused with one line and exit 2, nothing stored; a missing
 * schedule is exit 3.
 */

let db: MigratedDatabase;
let server: WaymarkProcess;
let sweeper: WaymarkProcess;
let address: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });
const ok = async (...args: string[]): Promise<string> => {
  const r = await cli(...args);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r.stdout;
};
const scheduleIds = async (): Promise<string[]> => jsonLines<{ id: string }>(await ok('schedules', 'list', '-o', 'json')).map((s) => s.id);

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_schedules_cli');
  ({ server, address } = await startOperatorServer(db));
  sweeper = WaymarkProcess.start(['sweeper'], { env: { DATABASE_URL: db.url, WAYMARK_METRICS_ADDR: '127.0.0.1:0', WAYMARK_SWEEP_INTERVAL_MS: '250' } });
  await sweeper.waitForLog((l) => l.msg === 'waymark sweeper started');
}, 120_000);

afterAll(async () => {
  await sweeper?.stop();
  await server?.stop();
  await db?.drop();
});

describe('waymark schedules', { timeout: 120_000 }, () => {
  it('creates, shows, lists, updates one field, pauses, unpauses, triggers, backfills and deletes a schedule', async () => {
    const created = await ok('schedules', 'create', 'nightly', '--workflow', 'refund', '--input', '{"order":"A-1","amount":5}',
      '--cron', '0 3 * * *', '--time-zone', 'Europe/Berlin', '--exclude', '0 3 * * 0', '--label', 'team=billing', '--overlap', 'buffer_one',
      '--catchup-window', '5m', '--pause-on-failure', '--remaining', '0');
    expect(created).toBe('schedule nightly created; next tick none\n');
    const shown = await ok('schedules', 'get', 'nightly');
    expect(shown).toMatch(/^schedule\s+nightly\nstate\s+done\nspec\s+cron 0 3 \* \* \* \(Europe\/Berlin\)\nworkflow\s+refund\ninput\s+\{"order":"A-1","amount":5\}\nlabels\s+team=billing\n/);
    expect(shown).toMatch(/overlap\s+BUFFER_ONE, catch-up window 5m00s, pause on failure\n/);
    expect(shown).toMatch(/remaining\s+0\nactions\s+0 started, 0 skipped \(overlap\), 0 missed \(catch-up window\)\n/);
    const json = jsonLines(await ok('schedules', 'get', 'nightly', '-o', 'json'))[0]!;
    expect(json).toMatchObject({ id: 'nightly', spec: { cron: ['0 3 * * *'], timeZone: 'Europe/Berlin' }, policies: { overlap: 'SCHEDULE_OVERLAP_POLICY_BUFFER_ONE', catchupWindow: '300s' }, remainingActions: '0' });

    // One field changes; the cron expression, the exclusion and the action stay.
    expect(await ok('schedules', 'update', 'nightly', '--time-zone', 'Asia/Tokyo')).toBe('schedule nightly updated\n');
    expect(jsonLines(await ok('schedules', 'get', 'nightly', '-o', 'json'))[0]).toMatchObject({
      spec: { cron: ['0 3 * * *'], timeZone: 'Asia/Tokyo', exclude: ['0 3 * * 0'] }, action: { workflow: 'refund', labels: { team: 'billing' } }, remainingActions: '0',
    });
    await ok('schedules', 'create', 'hourly', '--workflow', 'refund', '--input', '{"order":"A-2","amount":1}', '--every', '1h', '--paused');
    const table = await ok('schedules', 'list');
    expect(table).toMatch(/^SCHEDULE\s+WORKFLOW\s+SPEC\s+STATE\s+NEXT\s+ACTIONS\s+LAST\n/);
    expect(table).toMatch(/\nhourly\s+refund\s+every 1h00m\s+paused\s+\S+Z\s+0\s+-\n/);
    expect(table).toMatch(/\nnightly\s+refund\s+cron 0 3 \* \* \* \(Asia\/Tokyo\)\s+done\s+-\s+0\s+-\n/);

    expect(await ok('schedules', 'pause', 'nightly', '--note', 'ledger migration')).toBe('schedule nightly paused\n');
    expect(await ok('schedules', 'get', 'nightly')).toMatch(/state\s+paused \(ledger migration\)\n/);
    expect(await ok('schedules', 'unpause', 'nightly')).toBe('schedule nightly unpaused\n');

    // Trigger: the sweeper starts the run; the run shows its schedule and is listed by it.
    expect(await ok('schedules', 'trigger', 'nightly', '--overlap', 'allow_all')).toBe('schedule nightly triggered\n');
    const runs = await until('the triggered run', async () => {
      const found = jsonLines<{ id: string; labels: Record<string, string> }>(await ok('runs', 'list', '--schedule', 'nightly', '-o', 'json'));
      return found.length > 0 ? found : undefined;
    });
    expect(runs).toHaveLength(1);
    expect(runs[0]!.labels).toMatchObject({ team: 'billing', 'waymark.schedule_id': 'nightly' });
    const scheduledAt = runs[0]!.labels['waymark.scheduled_at']!;
    expect(await ok('runs', 'get', runs[0]!.id)).toMatch(new RegExp(`\\nschedule +nightly, scheduled at ${scheduledAt.replaceAll('.', '\\.')} \\(waymark schedules get nightly\\)\\n`));
    const after = await until('the action recorded', async () => {
      const text = await ok('schedules', 'get', 'nightly');
      return /actions\s+1 started/.test(text) ? text : undefined;
    });
    expect(after).toMatch(new RegExp(`SCHEDULED\\s+STARTED\\s+CAUSE\\s+RUN\\n${scheduledAt.replace(/\.\d{3}Z$/, 'Z')}\\s+\\S+Z\\s+trigger\\s+${runs[0]!.id}\\n`));

    const backfilled = await ok('schedules', 'backfill', 'nightly', '--start', '2026-01-05T00:00:00Z', '--end', '2026-01-07T00:00:00Z', '--overlap', 'allow_all');
    expect(backfilled).toBe('schedule nightly: 2 ticks queued\n'); // 03:00 Tokyo on 5 and 6 January (the 4th is a Sunday: excluded)
    await until('the backfilled runs', async () => {
      const found = jsonLines<{ labels: Record<string, string> }>(await ok('runs', 'list', '--schedule', 'nightly', '-o', 'json'));
      return found.length === 3 ? found : undefined;
    });
    const times = jsonLines<{ labels: Record<string, string> }>(await ok('runs', 'list', '--label', 'waymark.schedule_id=nightly', '-o', 'json'))
      .map((r) => r.labels['waymark.scheduled_at']).filter((t) => t !== scheduledAt).sort();
    expect(times).toEqual(['2026-01-05T18:00:00.000Z', '2026-01-06T18:00:00.000Z']);

    expect(await ok('schedules', 'delete', 'nightly')).toBe('schedule nightly deleted\n');
    const again = await cli('schedules', 'delete', 'nightly');
    expect([again.code, again.stderr]).toEqual([3, expect.stringContaining('schedule "nightly" was not found')]);
    expect((await cli('schedules', 'get', 'nightly')).code).toBe(3);
    expect(await scheduleIds()).toEqual(['hourly']);
  });

  it.each([
    [['schedules', 'create', 'x', '--every', '1h'], '--workflow is required'],
    [['schedules', 'create', 'x', '--workflow', 'refund'], 'give --cron or --every'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--every', 'soon'], '--every takes a duration'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--every', '1h', '--overlap', 'sometimes'], '--overlap must be one of SKIP, BUFFER_ONE'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--every', '1h', '--start', 'tomorrow'], '--start takes an RFC 3339 time'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--input', '{"order":"A","amount":1}', '--cron', '61 * * * *'], 'schedule.spec.cron[0]'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--input', '{"order":"A","amount":1}', '--cron', '* * * * *', '--time-zone', 'Mars/Base'], 'schedule.spec.time_zone'],
    [['schedules', 'create', 'x', '--workflow', 'refund', '--input', '{"amount":"lots"}', '--every', '1h'], 'input'],
    [['schedules', 'update', 'hourly'], 'nothing to update'],
    [['schedules', 'backfill', 'hourly', '--start', '2026-01-01T00:00:00Z'], '--start and --end are required'],
  ])('refuses %j with one line, exit 2, nothing stored', async (args, message) => {
    const before = await scheduleIds();
    const r = await cli(...args);
    expect([r.code, r.stdout]).toEqual([2, '']);
    expect(r.stderr).toContain(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(await scheduleIds()).toEqual(before);
  });
});
