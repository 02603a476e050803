/* eslint-disable no-control-regex -- terminal escape codes are what these tests look for */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { startChargeSink } from '../support/restartable-server.js';
import { until } from '../support/until.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, runSnapshot, startCli, startOperatorServer, type CliResult } from './operator-harness.js';

/*
 * Every operator command (src/cli/client/), run as the built CLI in a subprocess against one
 * real server, in both output modes (bad input: operator-errors.test.ts; a terminal:
 * operator-terminal.test.ts).
 */

type Json = Record<string, any>;

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
let scratch: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });
const json = async (...args: string[]): Promise<Json[]> => {
  const r = await cli(...args, '-o', 'json');
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return jsonLines(r.stdout);
};
const ok = async (...args: string[]): Promise<string> => {
  const r = await cli(...args);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  expect(r.stdout).not.toMatch(/\x1b\[|\r/); // a pipe gets neither colours nor a progress line
  return r.stdout;
};

/** A refund run parked on its approval; returns the run id and the approval id. */
async function parkedRefund(order: string): Promise<{ runId: string; approvalId: string }> {
  const [started] = await json('runs', 'start', 'refund', '--input', JSON.stringify({ order, amount: 12.5 }), '--wait');
  expect(started!.run.status).toBe('RUN_STATUS_SUSPENDED');
  return { runId: started!.run.id, approvalId: started!.waitingOn[0].approvalId };
}

async function settled(runId: string): Promise<Json> {
  return until(`run ${runId} to end`, async () => {
    const [r] = await json('runs', 'get', runId);
    return ['RUN_STATUS_SUCCEEDED', 'RUN_STATUS_FAILED', 'RUN_STATUS_CANCELLED'].includes(r!.run.status) ? r!.run : undefined;
  });
}

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_operator_cli');
  sink = await startChargeSink();
  ({ server, address } = await startOperatorServer(db, { WAYMARK_EXAMPLE_SINK_URL: sink.url }));
  scratch = mkdtempSync(path.join(os.tmpdir(), 'waymark-cli-'));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

// Each test has runs of its own and checks what it wrote per run, so any order works.
describe('every command, in both output modes', { timeout: 180_000 }, () => {
  it('workflows list', async () => {
    expect(await ok('workflows', 'list')).toMatch(/^NAME\s+VERSION\s+DIGEST[^\n]*\nawait_go\s+1 /m);
    const rows = await json('workflows', 'list');
    expect(rows.map((w) => w.name).sort()).toEqual(['await_go', 'failing', 'refund']);
    expect(rows.find((w) => w.name === 'refund')).toMatchObject({ version: '1', driftPolicy: 'DRIFT_POLICY_WARN', replicas: [expect.any(String)] });
  });

  it('the refund: runs start --wait parks it, approvals list/get/complete decide it, runs get/journal/events/resume --dry-run show it ran once', async () => {
    const table = await ok('runs', 'start', 'refund', '--input', '{"order":"R-1","amount":12.5}', '--wait', '--label', 'team=billing');
    const runId = /^run\s+(\S+)$/m.exec(table)![1]!;
    expect(table).toMatch(/^started run /); // plain lines on a pipe: the events, then the run
    expect(table).toMatch(/approval approval {2}suspended {2}Refund \$12.5 for order R-1\?/);
    expect(table).toMatch(/^status\s+SUSPENDED$/m);
    expect(table).toContain(`waymark approvals complete ${runId}:1 --decision approve|deny --by NAME`);

    const pendingTable = await ok('approvals', 'list', '--run', runId);
    expect(pendingTable).toMatch(new RegExp(`^${runId}:1\\s+refund\\s+PENDING\\s+Refund \\$12.5 for order R-1\\?`, 'm'));
    const [pending] = await json('approvals', 'list', '--workflow', 'refund', '--run', runId);
    expect(pending).toMatchObject({ id: `${runId}:1`, runId, state: 'APPROVAL_STATE_PENDING', onTimeout: 'APPROVAL_DECISION_DENY' });
    expect(await ok('approvals', 'get', `${runId}:1`)).toMatch(/^deadline\s+\S+, then denied automatically$/m);
    expect((await json('approvals', 'get', `${runId}:1`))[0]).toMatchObject({ title: 'Refund $12.5 for order R-1?' });

    const decided = await ok('approvals', 'complete', `${runId}:1`, '--decision', 'approve', '--by', 'ana', '--comment', 'receipt checked');
    expect(decided).toMatch(/^approved; run \S+ resumes$/m);
    expect(decided).toMatch(/^decided by\s+ana at /m);
    const run = await settled(runId);
    expect(run).toMatchObject({ status: 'RUN_STATUS_SUCCEEDED', labels: { team: 'billing' }, output: { status: 'refunded' } });
    expect(sink.charges.get('R-1')).toBe(1);

    const journal = await ok('runs', 'journal', runId);
    expect(journal.split('\n')[0]).toMatch(/^SEQ\s+SCOPE\s+KIND\s+NAME\s+STATUS\s+ATTEMPT\s+DURATION\s+TOKENS\s+COST\s+BY\s+DETAIL$/);
    expect(journal).toMatch(/^3\s+-\s+approval\s+approval\s+resolved\s+-\s+\S+\s+-\s+-\s+ana\s+\{.*"approved":true/m);
    expect(journal.match(/charge_back/g)).toHaveLength(2); // one intent, one outcome
    expect(journal).toMatch(/^6\s+-\s+tool\s+charge_back\s+ok\s+1\s+\d+ms\s+/m);
    const entries = await json('runs', 'journal', runId);
    expect(entries.map((e) => e.seq)).toEqual(entries.map((_, i) => String(i)));
    expect(entries.filter((e) => e.kind === 'tool').map((e) => e.status)).toEqual(['ENTRY_STATUS_RUNNING', 'ENTRY_STATUS_OK']);
    expect(entries.at(-1)).toMatchObject({ kind: 'status', name: 'SUCCEEDED' });

    const events = await ok('runs', 'events', runId);
    expect(events.trimEnd().split('\n').at(-1)).toMatch(/^\s+8\s+\S+\s+run SUCCEEDED\s+\{"status":"refunded"/);
    const eventLines = await json('runs', 'events', runId, '--after-seq', '4');
    expect(eventLines.map((e) => e.seq)).toEqual(['5', '6', '7', '8']);
    expect(eventLines.at(-1)!.statusChanged).toMatchObject({ status: 'RUN_STATUS_SUCCEEDED' });

    const preview = await ok('runs', 'resume', runId, '--dry-run');
    expect(preview).toMatch(/^preview \(nothing was executed or written\): 3 hits, 0 misses, 0 skipped, 0 reruns, 0 orphaned, 0 invalid resolutions$/m);
    expect(preview).toMatch(/^hit\s+6\s+-\s+tool\s+charge_back\s*$/m);
    const [p] = await json('runs', 'resume', runId, '--dry-run', '--invalidate', '6');
    expect(p).toMatchObject({ hits: 1, reruns: 1 }); // the approval replays; the rerun ends the preview
    expect(p!.items.find((i: Json) => i.name === 'charge_back')).toMatchObject({ outcome: 'RESUME_OUTCOME_RERUN' });
    expect(sink.charges.get('R-1')).toBe(1);

    expect(await ok('runs', 'provenance', runId)).toMatch(new RegExp(`^run ${runId} refund SUCCEEDED spent \\$0.00 .*\\n  no agents$`, 'm'));
    expect((await json('runs', 'provenance', runId))[0]).toMatchObject({ runId, workflowName: 'refund', status: 'RUN_STATUS_SUCCEEDED', agents: [] });

    const listed = await ok('runs', 'list', '--workflow', 'refund', '--status', 'succeeded', '--label', 'team=billing');
    expect(listed).toMatch(new RegExp(`^${runId}\\s+refund\\s+SUCCEEDED\\s+\\S+\\s+\\S+\\s+team=billing$`, 'm'));
    expect((await json('runs', 'list', '--label', 'team=billing')).map((r) => r.id)).toEqual([runId]);
  });

  it('runs start without --wait, with an idempotency key, input from a file and from stdin; runs list pages newest first', async () => {
    const file = path.join(scratch, 'order.json');
    writeFileSync(file, '{"order":"I-1","amount":1}');
    const [first] = await json('runs', 'start', 'refund', '--input', `@${file}`, '--idempotency-key', 'order-I-1', '--label', 'batch=i');
    expect(first).toMatchObject({ created: true, run: { idempotencyKey: 'order-I-1' } });
    const again = await runCli(['runs', 'start', 'refund', '--input', '-', '--idempotency-key', 'order-I-1', '--label', 'batch=i'], { address, stdin: '{"order":"I-1","amount":1}' });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^created now\s+no: an earlier start with this idempotency key$/m);
    expect(again.stdout).toContain(first!.run.id);
    const [second] = await json('runs', 'start', 'refund', '--input', '{"order":"I-2","amount":1}', '--label', 'batch=i');
    const ids = (await json('runs', 'list', '--label', 'batch=i', '--limit', '0')).map((r) => r.id);
    expect(ids).toEqual([second!.run.id, first!.run.id]);
    const limited = await cli('runs', 'list', '--label', 'batch=i', '--limit', '1');
    expect(limited.stdout).toContain(second!.run.id);
    expect(limited.stdout).not.toContain(first!.run.id);
    expect(limited.stderr).toMatch(/showing the newest 1; more match/);
    for (const r of [first, second]) await ok('runs', 'cancel', r!.run.id);
  });

  it('runs cancel, in both modes, leaves the run CANCELLED', async () => {
    const a = await parkedRefund('C-1');
    const b = await parkedRefund('C-2');
    expect(await ok('runs', 'cancel', a.runId, '--reason', 'customer withdrew')).toMatch(/^status\s+CANCELLED$/m);
    const [cancelled] = await json('runs', 'cancel', b.runId);
    expect(cancelled).toMatchObject({ id: b.runId, status: 'RUN_STATUS_CANCELLED' });
    expect((await json('runs', 'get', a.runId))[0]!.run.error.message).toContain('customer withdrew');
  });

  it('signals send, in both modes; a payload failing the wait\'s schema writes nothing', async () => {
    const [x] = await json('runs', 'start', 'await_go', '--input', '{}', '--wait');
    const [y] = await json('runs', 'start', 'await_go', '--input', '{}', '--wait');
    expect(x!.waitingOn[0]).toMatchObject({ kind: 'signal', name: 'go' });
    const started = await ok('runs', 'get', x!.run.id);
    expect(started).toContain(`deliver: waymark signals send ${x!.run.id} go --payload JSON`);

    const before = await runSnapshot(db, x!.run.id);
    const bad = await cli('signals', 'send', x!.run.id, 'go', '--payload', '{"n":"two"}');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^waymark signals send: .*n: /);
    expect(bad.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await runSnapshot(db, x!.run.id)).toEqual(before);

    expect(await ok('signals', 'send', x!.run.id, 'go', '--payload', '{"n":2}', '--signal-id', 'sig-x')).toMatch(/^signal "go" delivered to run \S+ \(journal seq \d+\)$/m);
    const [sent] = await json('signals', 'send', y!.run.id, 'go', '--payload', '{"n":5}');
    expect(sent).toMatchObject({ applied: true, buffered: false });
    const repeat = await ok('signals', 'send', x!.run.id, 'go', '--payload', '{"n":2}', '--signal-id', 'sig-x');
    expect(repeat).toContain('a repeat of an earlier delivery with this id');
    expect((await settled(x!.run.id)).output).toEqual({ doubled: 4 });
    expect((await settled(y!.run.id)).output).toEqual({ doubled: 10 });
  });

  it('runs events --follow streams until the run ends, in both modes', async () => {
    const [a] = await json('runs', 'start', 'await_go', '--input', '{}', '--wait');
    const [b] = await json('runs', 'start', 'await_go', '--input', '{}', '--wait');
    const followTable = startCli(['runs', 'events', a!.run.id, '--follow'], { address });
    const followJson = startCli(['runs', 'events', b!.run.id, '--follow', '-o', 'json'], { address });
    // Both have printed the history up to the park, so what follows arrives live.
    await followTable.waitFor(/run SUSPENDED\n/);
    await followJson.waitFor(/"status":"RUN_STATUS_SUSPENDED"/);
    await ok('signals', 'send', a!.run.id, 'go', '--payload', '{"n":1}');
    await ok('signals', 'send', b!.run.id, 'go', '--payload', '{"n":1}');
    const [t, j] = await Promise.all([followTable.done, followJson.done]);
    expect(t.code, t.stderr).toBe(0);
    expect(t.stdout).toMatch(/run SUSPENDED\n(.*\n)*.*go {2}resolved by signal.*\n(.*\n)*.*run SUCCEEDED {2}\{"doubled":2\}\n$/);
    expect(j.code, j.stderr).toBe(0);
    const events = jsonLines(j.stdout);
    expect(events.map((e) => Number(e.seq))).toEqual(events.map((_, i) => i));
    expect(events.at(-1)!.statusChanged).toMatchObject({ status: 'RUN_STATUS_SUCCEEDED', output: { doubled: 2 } });
  });

  it('runs start --wait of a run that fails exits 7; runs resume retries it, in both modes', async () => {
    const failed = await cli('runs', 'start', 'failing', '--input', '{}', '--wait');
    expect(failed.code).toBe(7);
    expect(failed.stdout).toMatch(/^status\s+FAILED$/m);
    expect(failed.stdout).toMatch(/^error\s+Error: the ledger is closed/m);
    const runId = /^run\s+(\S+)$/m.exec(failed.stdout)![1]!;
    const preview = await ok('runs', 'resume', runId, '--dry-run');
    expect(preview).toMatch(/1 reruns/);
    expect(await ok('runs', 'resume', runId)).toMatch(/^run\s+\S+$/m);
    await settled(runId);
    const [resumed] = await json('runs', 'resume', runId);
    expect(resumed!.run.id).toBe(runId);
    const [j] = await json('runs', 'start', 'failing', '--input', '{}', '--wait').catch(() => [undefined]);
    expect(j).toBeUndefined(); // exit 7 is not 0: json() rejects
  });
});
