import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMigratedDatabase, type MigratedDatabase } from '../support/database.js';
import { until } from '../support/until.js';
import type { WaymarkProcess } from '../support/waymark-process.js';
import { BIN, cliEnv, jsonLines, runCli, startOperatorServer, storeSnapshot, type CliResult } from './operator-harness.js';

/*
 * Bad input to the operator commands (src/cli/client/), through the built CLI against a real
 * server, in both output modes: one line on stderr naming what to fix, the documented exit code
 * (docs/cli.md "Exit codes"), nothing on stdout and nothing written to the store.
 */

type Json = Record<string, any>;

let db: MigratedDatabase;
let server: WaymarkProcess;
let address: string;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, { address });
const json = async (...args: string[]): Promise<Json[]> => {
  const r = await cli(...args, '-o', 'json');
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
  return jsonLines(r.stdout);
};

async function parkedRefund(order: string): Promise<{ runId: string; approvalId: string }> {
  const [started] = await json('runs', 'start', 'refund', '--input', JSON.stringify({ order, amount: 12.5 }), '--wait');
  return { runId: started!.run.id, approvalId: started!.waitingOn[0].approvalId };
}

beforeAll(async () => {
  db = await createMigratedDatabase('waymark_operator_errors');
  ({ server, address } = await startOperatorServer(db));
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await db?.drop();
});

describe('bad input: one line, the documented exit code, nothing written', { timeout: 180_000 }, () => {
  let parked: { runId: string; approvalId: string };
  let decided: { runId: string; approvalId: string };

  beforeAll(async () => {
    parked = await parkedRefund('BAD-1');
    decided = await parkedRefund('BAD-2');
    expect((await cli('approvals', 'complete', decided.approvalId, '--decision', 'approve', '--by', 'ana')).code).toBe(0);
    await until('the decided run to end', async () => ((await json('runs', 'get', decided.runId))[0]!.run.status === 'RUN_STATUS_SUCCEEDED' ? true : undefined));
  }, 60_000);

  const unknownRun = randomUUID().replace(/^(.{14})./, '$17'); // a well-formed run id (UUIDv7 shape) nobody started
  const cases: Array<[string, () => string[], number, RegExp]> = [
    ['an unknown run', () => ['runs', 'get', unknownRun], 3, /run .* was not found/],
    ['an unknown run (events)', () => ['runs', 'events', unknownRun, '--follow'], 3, /was not found/],
    ['an unknown approval', () => ['approvals', 'complete', `${unknownRun}:1`, '--decision', 'approve', '--by', 'ana'], 3, /approval .* was not found/],
    ['an unknown workflow', () => ['runs', 'start', 'no_such_flow', '--input', '{}'], 3, /workflow "no_such_flow" is not registered/],
    ['a malformed run id', () => ['runs', 'get', 'not-a-run'], 2, /run_id: must be a run id/],
    ['malformed JSON', () => ['runs', 'start', 'refund', '--input', '{"order": "A-1",'], 2, /--input is not valid JSON/],
    ['malformed JSON on stdin', () => ['runs', 'start', 'refund', '--input', '-'], 2, /--input is not valid JSON \(standard input/],
    ['an input failing the schema', () => ['runs', 'start', 'refund', '--input', '{"order":"A-1","amount":"lots"}'], 2, /input of workflow "refund" is invalid: amount/],
    ['a wrong decision word', () => ['approvals', 'complete', parked.approvalId, '--decision=maybe', '--by', 'ana'], 2, /--decision must be approve or deny; got "maybe"/],
    ['a decision without --by', () => ['approvals', 'complete', parked.approvalId, '--decision', 'approve'], 2, /--by is required/],
    ['an approval decided twice', () => ['approvals', 'complete', decided.approvalId, '--decision', 'deny', '--by', 'bob'], 4, /already resolved .* nothing was changed/],
    ['a signal to a finished run', () => ['signals', 'send', decided.runId, 'go', '--payload', '{"n":1}'], 4, /is SUCCEEDED/],
    ['an unknown option', () => ['runs', 'list', '--colour'], 2, /unknown option --colour/],
    ['a missing argument', () => ['runs', 'get'], 2, /missing <run>/],
    ['a bad seq', () => ['runs', 'resume', parked.runId, '--invalidate', 'six'], 2, /--invalidate must be a journal seq/],
    ['an unknown command', () => ['runs', 'restart'], 2, /unknown command "restart"; one of start, get/],
    ['a start without --input of a workflow that takes one', () => ['runs', 'start', 'refund'], 2, /: no --input was given, and the input of workflow "refund" is invalid: /],
    ['options before the group', () => ['--addr', address, 'runs', 'get', unknownRun], 3, /^waymark runs get: run .* was not found/],
  ];

  // Concurrent: none of them writes, so each one's before-and-after also watches the others.
  it.concurrent.each(cases)('%s', async (_, args, code, message) => {
    const before = await storeSnapshot(db);
    const results = await Promise.all(['table', 'json'].map((output) => runCli([...args(), '-o', output], { address, stdin: '{"order":' })));
    for (const r of results) {
      expect(r.code, r.stderr).toBe(code);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^waymark [a-z]+( [a-z]+)?: /);
      expect(lines[0]).toMatch(message);
    }
    expect(await storeSnapshot(db)).toEqual(before);
  });

  it('an approval refused by the wrong decision word is still pending, and can be decided', async () => {
    const [a] = await json('approvals', 'get', parked.approvalId);
    expect(a!.state).toBe('APPROVAL_STATE_PENDING');
  });

  it('--help of every command prints its usage, options and an example', async () => {
    const commands = [
      'runs start', 'runs get', 'runs list', 'runs cancel', 'runs journal', 'runs events', 'runs resume', 'runs provenance',
      'approvals list', 'approvals get', 'approvals complete', 'signals send', 'workflows list', 'flows register', 'flows get', 'flows list',
    ];
    const helps = await Promise.all(commands.map((c) => runCli([...c.split(' '), '--help'])));
    helps.forEach((r, i) => {
      expect(r.code, commands[i]).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: waymark ${commands[i]}`));
      expect(r.stdout).toMatch(new RegExp(`\nExamples?:\n  waymark ${commands[i]}(\\s|$)`, 'm'));
      expect(r.stdout).toContain('--addr HOST:PORT');
      expect(r.stdout).toContain('Exit codes: 0 ok, 1 error, 2 invalid input, 3 not found, 4 wrong state, 5 unavailable');
    });
    const top = await runCli(['--help']);
    for (const c of ['waymark dev', 'waymark runs start|get|list|cancel|journal|events|resume|provenance', 'waymark approvals list|get|complete', 'waymark flows register|get|list']) expect(top.stdout).toContain(c);
    expect((await runCli(['runs', '--help'])).stdout).toMatch(/^ {2}resume <run> +Makes a suspended, failed, cancelled or finished run execute again/m);
  });

  it('a reader that goes away (| head -1) ends the command quietly with exit 0, even while following', async () => {
    const run = await parkedRefund('BAD-PIPE');
    const child = spawn(process.execPath, [BIN, 'runs', 'events', run.runId, '--follow', '-o', 'json'], { env: cliEnv({ WAYMARK_ADDR: address }), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy(); // the reader leaves; the next event written is an EPIPE
    expect((await cli('approvals', 'complete', run.approvalId, '--decision', 'approve', '--by', 'ana')).code).toBe(0);
    expect(await exited, stderr).toBe(0);
    expect(stderr).toBe('');
  });

  it('an unreachable server: exit 5 naming the address, after the --timeout', async () => {
    for (const output of ['table', 'json']) {
      const r = await runCli(['runs', 'list', '--addr', '127.0.0.1:1', '--timeout', '1s', '-o', output]);
      expect(r.code).toBe(5);
      expect(r.stdout).toBe('');
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(/cannot reach the server at 127\.0\.0\.1:1 .*ECONNREFUSED.*--addr or WAYMARK_ADDR/);
    }
  });

  it('--token and WAYMARK_TOKEN go out as a bearer token; UNAUTHENTICATED is exit 6', async () => {
    // A stand-in for a server that checks tokens (the API has none yet): it records the header and refuses.
    const seen: string[] = [];
    const h2 = createServer((req, res) => {
      seen.push(String(req.headers.authorization));
      res.writeHead(200, { 'content-type': 'application/grpc' });
      res.addTrailers({ 'grpc-status': '16', 'grpc-message': 'token expired' });
      res.end();
    });
    await new Promise<void>((resolve) => h2.listen(0, '127.0.0.1', resolve));
    const at = `127.0.0.1:${(h2.address() as AddressInfo).port}`;
    try {
      const byFlag = await runCli(['runs', 'list', '--addr', at, '--token', 's3cret']);
      const byEnv = await runCli(['runs', 'list', '--addr', at], { env: { WAYMARK_TOKEN: 'fr0m-env' } });
      for (const r of [byFlag, byEnv]) {
        expect(r.code).toBe(6);
        expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(r.stderr).toMatch(/the server refused the credentials: token expired; check --token or WAYMARK_TOKEN/);
      }
      expect(seen).toEqual(['Bearer s3cret', 'Bearer fr0m-env']);
    } finally {
      await new Promise((resolve) => h2.close(resolve));
    }
  });
});
