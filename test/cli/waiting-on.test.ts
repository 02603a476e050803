import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Issue 30: what `waymark runs get` says a parked run waits for. The built-in http tool's retry
 * backoff is a backoff (a timer), not a remote call waiting for a worker.
 */

let unavailable: Server;
let server: WaymarkProcess;
let address: string;
let url: string;

beforeAll(async () => {
  unavailable = createServer((_, res) => res.writeHead(503).end('later'));
  await new Promise<void>((resolve) => unavailable.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(unavailable.address() as { port: number }).port}/status`;
  server = WaymarkProcess.start(['server', '--workflows', path.resolve('test/cli/fixtures/backoff-workflows.ts')], {
    env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0' },
  });
  address = await server.listening();
});

afterAll(async () => {
  await server?.stop();
  await new Promise((resolve) => unavailable.close(resolve));
});

function waymark(...args: string[]) {
  return spawnSync(process.execPath, [path.resolve('bin/waymark.js'), ...args, '--addr', address], { encoding: 'utf8' });
}

describe('waiting_on', () => {
  it('the http tool\'s retry backoff is described as a backoff, not as a missing worker', () => {
    const start = waymark('runs', 'start', 'fetch_status', '--input', JSON.stringify({ url }), '--wait', '-o', 'json');
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
