import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 30: what `waymark runs get` says a parked run waits for. The built-in http tool's retry
 * backoff is a backoff (a timer), not a remote call waiting for a worker. `runs start --wait` waits
 * through such parks (a backoff, a timer) until the run ends or waits on an approval or a signal.
 */

let unavailable: ChildProcess;
let server: WaymarkProcess;
let address: string;
let url: string;

beforeAll(async () => {
  // In a process of its own: the tests call the CLI with spawnSync, which blocks this process, so a
  // server here could not answer the run's http tool until the tool's own timeout (30 s).
  unavailable = spawn(process.execPath, ['-e', `require('node:http').createServer((_, res) => res.writeHead(503).end('later'))
    .listen(0, '127.0.0.1', function () { console.log(this.address().port); })`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => createInterface({ input: unavailable.stdout! }).once('line', resolve));
  url = `http://127.0.0.1:${port}/status`;
  server = WaymarkProcess.start(['server', '--workflows', path.resolve('test/cli/fixtures/backoff-workflows.ts')], {
    env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0' },
  });
  address = await server.listening();
});

afterAll(async () => {
  await server?.stop();
  unavailable?.kill();
});

// A minute per call, not the default 10 s: the subject is what the run waits on, not how fast a
// loaded machine answers.
function waymark(...args: string[]) {
  return spawnSync(process.execPath, [path.resolve('bin/waymark.js'), ...args, '--addr', address, '--timeout', '60s'], { encoding: 'utf8' });
}

describe('waiting_on', () => {
  it('the http tool\'s retry backoff is described as a backoff, not as a missing worker', () => {
    const start = waymark('runs', 'start', 'fetch_status', '--input', JSON.stringify({ url }), '--wait-for', 'first-park', '-o', 'json');
    expect(start.status, start.stderr).toBe(0);
    const runId = (JSON.parse(start.stdout.trim().split('\n').at(-1)!) as { run: { id: string } }).run.id;
    const got = waymark('runs', 'get', runId, '-o', 'json');
    const { waitingOn } = JSON.parse(got.stdout) as { waitingOn: Array<{ kind: string; name: string; detail: string; liveWorkers?: number }> };
    expect(waitingOn).toHaveLength(1);
    expect(waitingOn[0]).toMatchObject({ kind: 'tool', name: 'http' });
    expect(waitingOn[0]!.detail).toMatch(/^a retry backoff before attempt 2 of tool http, due \d{4}-/);
    expect(waitingOn[0]!.detail).not.toMatch(/worker/);
    const text = waymark('runs', 'get', runId);
    expect(text.stdout).toContain('a retry backoff before attempt 2 of tool http');
  }, 120_000);

  it('runs start --wait goes through a retry backoff to the end, saying on stderr what the run waited on', () => {
    const start = waymark('runs', 'start', 'retry_then_done', '--input', JSON.stringify({ key: 'k1' }), '--wait');
    expect(start.status, start.stderr).toBe(0);
    expect(start.stdout).toMatch(/^status +SUCCEEDED$/m);
    expect(start.stdout).toMatch(/^output +\{"ok":"k1"\}$/m);
    // The server's description when the run is still parked as the CLI asks, else the wait the stream showed.
    expect(start.stderr).toMatch(/parked at seq \d+, waiting on (a retry backoff before attempt 2 of tool flaky_once, due .*|tool "flaky_once"); it continues by itself/);
  }, 120_000);

  it('runs start --wait goes through a timer and answers at the approval; --wait-for first-park stops at the timer', () => {
    const start = waymark('runs', 'start', 'nap_then_approve', '--input', '{}', '--wait', '-o', 'json');
    expect(start.status, start.stderr).toBe(0);
    const answer = JSON.parse(start.stdout.trim().split('\n').at(-1)!) as { run: { status: string }; waitingOn: Array<{ kind: string }>; waitComplete: boolean };
    expect(answer.run.status).toBe('RUN_STATUS_SUSPENDED');
    expect(answer.waitingOn.map((w) => w.kind)).toEqual(['approval']);
    expect(answer.waitComplete).toBe(true);
    expect(start.stderr).toMatch(/waiting on sleep "sleep"/);
    const first = waymark('runs', 'start', 'nap_then_approve', '--input', '{}', '--wait-for', 'first-park', '-o', 'json');
    expect(first.status, first.stderr).toBe(0);
    const parked = JSON.parse(first.stdout.trim().split('\n').at(-1)!) as { run: { status: string }; waitingOn: Array<{ kind: string }> };
    expect(parked.run.status).toBe('RUN_STATUS_SUSPENDED');
    expect(parked.waitingOn.map((w) => w.kind)).toEqual(['sleep']);
    const bad = waymark('runs', 'start', 'nap_then_approve', '--input', '{}', '--wait-for', 'forever');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--wait-for must be one of first-park, outside-input, end; got "forever"');
  }, 120_000);

  it('waymark tools list: the tools runs can call, with their kind, workers and input fields', () => {
    const text = waymark('tools', 'list');
    expect(text.status, text.stderr).toBe(0);
    const lines = text.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +KIND +LIVE WORKERS +WORKERS +INPUT +DESCRIPTION$/);
    expect(lines.find((l) => l.startsWith('http '))).toMatch(/^http +in process +- +- +\{ url, method, headers, body, timeoutMs \} +Makes an HTTP request/);
    const json = waymark('tools', 'list', '-o', 'json').stdout.trim().split('\n').map((l) => JSON.parse(l) as { declaration: { name: string; inputSchema: unknown } });
    expect(json.map((t) => t.declaration.name)).toEqual(expect.arrayContaining(['http', 'echo']));
    expect(json.find((t) => t.declaration.name === 'http')!.declaration.inputSchema).toMatchObject({ type: 'object' });
  }, 120_000);
});
