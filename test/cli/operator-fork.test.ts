import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { startChargeSink } from '../support/restartable-server.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { jsonLines, runCli, startOperatorServer, type CliResult } from './operator-harness.js';

/*
 * `waymark runs fork` and `waymark runs compare` (docs/forks.md) as the built CLI in a subprocess
 * against a real server, in both output modes, and their bad input.
 */

type Json = Record<string, any>;

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;
let sink: Awaited<ReturnType<typeof startChargeSink>>;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });
const json = async (...args: string[]): Promise<Json[]> => {
  const r = await cli(...args, '-o', 'json');
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return jsonLines(r.stdout);
};

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_operator_fork');
  sink = await startChargeSink();
  ({ server, address } = await startOperatorServer(db, { WAYMARK_EXAMPLE_SINK_URL: sink.url }));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await db?.drop();
});

describe('runs fork and runs compare', { timeout: 180_000 }, () => {
  it('forks a parked refund at its approval with a denial, previews first, and compares the two', async () => {
    const [started] = await json('runs', 'start', 'refund', '--input', JSON.stringify({ order: 'fork-1', amount: 5 }), '--wait');
    const source = started!.run.id as string;
    const at = String(started!.waitingOn[0].seq);

    const preview = await cli('runs', 'fork', source, '--at', at, '--decision', 'deny', '--dry-run');
    expect(preview.code, preview.stderr).toBe(0);
    expect(preview.stdout).toMatch(/^fork preview \(nothing was executed or written\): fork point seq \d+, \d+ entries kept, \d+ dropped/m);
    const [p] = await json('runs', 'fork', source, '--at', at, '--decision', 'deny', '--dry-run');
    expect(String(p!.forkSeq)).toBe(at);

    const [forked] = await json('runs', 'fork', source, '--at', at, '--decision', 'deny', '--comment', 'not this one', '--wait', '--idempotency-key', 'cli-fork-1');
    expect(forked!.created).toBe(true);
    expect(forked!.run).toMatchObject({ status: 'RUN_STATUS_SUCCEEDED', forkedFromRunId: source, forkSeq: at });
    const text = await cli('runs', 'fork', source, '--at', at, '--decision', 'deny', '--wait', '--idempotency-key', 'cli-fork-1');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(new RegExp(`^run\\s+${forked!.run.id}$`, 'm'));
    expect(text.stdout).toMatch(new RegExp(`^forked from\\s+${source} at seq ${at}$`, 'm'));
    expect(text.stdout).toMatch(/^created\s+no: the idempotency key named an earlier fork$/m);
    const [got] = await json('runs', 'get', source);
    expect(got!.forks).toEqual([forked!.run.id]);

    const [c] = await json('runs', 'compare', source, forked!.run.id);
    expect(String(c!.forkSeq)).toBe(at);
    const approval = c!.effects.find((e: Json) => e.kind === 'approval');
    // Open in the source, decided in the fork.
    expect(approval).toMatchObject({ difference: 'EFFECT_DIFFERENCE_CHANGED', a: { status: 'suspended' }, b: { status: 'resolved' } });
    const compared = await cli('runs', 'compare', source, forked!.run.id);
    expect(compared.code, compared.stderr).toBe(0);
    expect(compared.stdout).toMatch(new RegExp(`^fork point: seq ${at}$`, 'm'));
    expect(compared.stdout).toMatch(/^DIFF\s+KEPT\s+SCOPE\s+KIND\s+NAME\s+A\s+B\s+OUTPUT/m);
  });

  it('refuses bad input with one line and the documented exit code', async () => {
    const [started] = await json('runs', 'start', 'refund', '--input', JSON.stringify({ order: 'fork-2', amount: 5 }), '--wait');
    const source = started!.run.id as string;
    const noAt = await cli('runs', 'fork', source);
    expect([noAt.code, noAt.stderr.trim().split('\n').length]).toEqual([2, 1]);
    expect(noAt.stderr).toMatch(/--at is required/);
    const badDecision = await cli('runs', 'fork', source, '--at', '1', '--decision', 'maybe');
    expect(badDecision.code).toBe(2);
    const past = await cli('runs', 'fork', source, '--at', '999');
    expect(past.code).toBe(2);
    expect(past.stderr).toMatch(/at_seq/);
  });
});
