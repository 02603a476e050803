import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { RestartableServer, startChargeSink, startRestartControl, unservedRpc } from '../support/restartable-server.js';
import { opensslAvailable, TestCertificates, type Issued } from '../support/test-certificates.js';
import { createApiKey } from '../support/api-keys.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * The Go and Python clients' own test suites, run against a real `waymark server` this file
 * starts: `go test ./...` in clients/go and pytest in clients/python, as child processes with
 * WAYMARK_ADDRESS set (their live tests skip without it) and WAYMARK_RESTART_URL, through which a
 * test asks this harness to restart the server mid-run (startRestartControl), and a second
 * replica on the same database (WAYMARK_REPLICA_ADDRESS) with WAYMARK_ROLLING_RESTART_URL, through
 * which a test restarts both one after the other as a rollout does. A third server on the same
 * database serves TLS and requires a client certificate (WAYMARK_TEST_TLS_ADDRESS, with the CA
 * and a client certificate in WAYMARK_TEST_TLS_*_FILE; throwaway files from openssl). A fourth
 * runs with authentication on (WAYMARK_TEST_AUTH_ADDRESS), with an API key of the default
 * namespace in WAYMARK_TEST_TOKEN and its id in WAYMARK_TEST_KEY_ID. A `waymark sweeper` on the
 * database takes schedules' ticks, triggers and backfills (the live schedule tests) and hands on
 * the runs of a killed server, as a deployment's does. The TypeScript
 * client's tests are ordinary vitest files (clients/ts/test). A missing toolchain skips its
 * language with a warning naming the setup step (scripts/setup-clients.sh); it never fails
 * silently as a pass.
 */

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
const pytestAvailable = existsSync(python) && spawnSync(python, ['-c', 'import pytest, pytest_asyncio, waymark'], { stdio: 'ignore' }).status === 0;

let db: TestDatabase;
let server: RestartableServer;
/** A second replica on the same database, for the rolling-restart tests. */
let replica: RestartableServer;
let control: Awaited<ReturnType<typeof startRestartControl>>;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
/** The TLS server (mTLS required) and its files; absent without openssl. */
let tlsServer: RestartableServer | undefined;
let certs: TestCertificates | undefined;
let clientCert: Issued | undefined;
/** The server with authentication on, and the key the clients send to it. */
let authServer: RestartableServer;
let authKey: { secret: string; keyId: string };
/** The sweeper: schedules' ticker (clients/go/waymark/schedules_live_test.go, clients/python/tests/test_schedules_live.py) and recovery. */
let sweeper: WaymarkProcess;
/** An RPC the server does not serve yet; the live tests cannot run without the whole API. */
let unserved: string | undefined;

beforeAll(async () => {
  db = await createTestDatabase('waymark_clients');
  sink = await startChargeSink();
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url });
  replica = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url });
  if (opensslAvailable) {
    certs = new TestCertificates();
    const serverCert = certs.server();
    clientCert = certs.client('client-tests');
    tlsServer = new RestartableServer({
      DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url,
      WAYMARK_TLS_CERT_FILE: serverCert.certFile, WAYMARK_TLS_KEY_FILE: serverCert.keyFile, WAYMARK_TLS_CLIENT_CA_FILE: certs.caFile,
    });
  } else {
    console.warn('clients.test.ts: openssl is missing, so the clients\' TLS tests skip');
  }
  authServer = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url, WAYMARK_AUTH: 'on' });
  sweeper = WaymarkProcess.start(['sweeper'], { env: { DATABASE_URL: db.url } });
  await Promise.all([server.start(), replica.start(), tlsServer?.start(), authServer.start(), sweeper.waitForLog((l) => l.msg === 'waymark sweeper started')]);
  authKey = await createApiKey(db.url, { namespace: 'default', scopes: ['runs:read', 'runs:write', 'approvals:decide', 'signals:send'], name: 'client tests' });
  unserved = await unservedRpc(server.address);
  control = await startRestartControl(server, replica);
});

afterAll(async () => {
  await control?.close();
  await server?.stop();
  await replica?.stop();
  await tlsServer?.stop();
  await authServer?.stop();
  await sweeper?.stop();
  certs?.remove();
  await sink?.close();
  await db?.drop();
});

interface Finished {
  code: number | null;
  output: string;
  seconds: number;
}

/** Runs a client's test command with the server's address; resolves when it exits. */
function run(command: string, args: string[], cwd: string): Promise<Finished> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: {
        ...process.env, WAYMARK_ADDRESS: server.address, WAYMARK_REPLICA_ADDRESS: replica.address,
        WAYMARK_RESTART_URL: control.url, WAYMARK_ROLLING_RESTART_URL: control.url.replace(/\/restart$/, '/rolling-restart'),
        WAYMARK_TEST_AUTH_ADDRESS: authServer.address, WAYMARK_TEST_TOKEN: authKey.secret, WAYMARK_TEST_KEY_ID: authKey.keyId,
        ...(tlsServer && certs && clientCert ? {
          WAYMARK_TEST_TLS_ADDRESS: tlsServer.address, WAYMARK_TEST_TLS_CA_FILE: certs.caFile,
          WAYMARK_TEST_TLS_CLIENT_CERT_FILE: clientCert.certFile, WAYMARK_TEST_TLS_CLIENT_KEY_FILE: clientCert.keyFile,
        } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output, seconds: (Date.now() - started) / 1000 }));
  });
}

interface GoEvent {
  Action: string;
  Package?: string;
  Test?: string;
  Output?: string;
}

/**
 * `go test -json` output as people read it: each package's result line, plus the full output of
 * every test that failed or skipped; and the counts of tests and subtests per outcome.
 */
function summarizeGoTest(json: string): { text: string; passed: number; failed: number; skipped: number } {
  const outputs = new Map<string, string>();
  const counts = { pass: 0, fail: 0, skip: 0 };
  const lines: string[] = [];
  for (const line of json.split('\n')) {
    let event: GoEvent;
    try {
      event = JSON.parse(line) as GoEvent;
    } catch {
      if (line.trim()) lines.push(line); // build errors and the like are not JSON
      continue;
    }
    const key = `${event.Package} ${event.Test ?? ''}`;
    if (event.Action === 'output') {
      if (event.Test) outputs.set(key, (outputs.get(key) ?? '') + (event.Output ?? ''));
      else if (event.Output && !/^(PASS|FAIL|=== |--- )/.test(event.Output)) lines.push(event.Output.trimEnd());
    } else if (event.Test && (event.Action === 'pass' || event.Action === 'fail' || event.Action === 'skip')) {
      counts[event.Action] += 1;
      if (event.Action !== 'pass') lines.push((outputs.get(key) ?? `--- ${event.Action.toUpperCase()}: ${event.Test}`).trimEnd());
    }
  }
  return { text: lines.join('\n'), passed: counts.pass, failed: counts.fail, skipped: counts.skip };
}

function report(language: string, result: Finished, counts: string): void {
  console.log(`--- ${language} client tests (${result.seconds.toFixed(1)} s, ${counts}, exit ${result.code}) ---\n${result.output.trimEnd()}\n--- end of ${language} client tests ---`);
}

function skipWithout(available: boolean, what: string, skip: (note?: string) => void): void {
  const note = !available
    ? `${what} is not installed; run scripts/setup-clients.sh to test this client`
    : unserved ? `the server answers ${unserved} with UNIMPLEMENTED; the client tests need the whole API` : undefined;
  if (!note) return;
  console.warn(`clients.test.ts: skipping: ${note}`);
  skip(note);
}

describe('Go and Python clients against a real server', () => {
  it('Go: go test ./... in clients/go', { timeout: 600_000 }, async (ctx) => {
    skipWithout(goAvailable, 'Go', ctx.skip);
    const result = await run('go', ['test', '-count=1', '-json', './...'], path.join(root, 'clients', 'go'));
    const go = summarizeGoTest(result.output);
    report('Go', { ...result, output: go.text }, `${go.passed} tests and subtests passed, ${go.failed} failed, ${go.skipped} skipped`);
    expect(result.code, `go test failed; server log:\n${server.tail()}`).toBe(0);
    expect(go.passed).toBeGreaterThan(0);
    expect(go.skipped, 'no live Go test may skip when a server is running').toBe(0);
    expect(sink.charges.get('go-A-1001'), 'the Go test\'s refund reached the payment provider exactly once').toBe(1);
  });

  it('Python: pytest in clients/python', { timeout: 600_000 }, async (ctx) => {
    skipWithout(pytestAvailable, 'The Python virtualenv (.venv with pytest and the client)', ctx.skip);
    const result = await run(path.join(root, '.venv', 'bin', 'pytest'), ['-q', '-rs', '-p', 'no:cacheprovider', '--durations=5'], path.join(root, 'clients', 'python'));
    const summary = result.output.trimEnd().split('\n').at(-1) ?? '';
    report('Python', result, summary.replace(/=/g, '').trim());
    expect(result.code, `pytest failed; server log:\n${server.tail()}`).toBe(0);
    expect(summary, 'no live Python test may skip when a server is running').not.toMatch(/skipped/);
    expect(sink.charges.get('py-A-1001'), 'the sync Python test\'s refund reached the payment provider exactly once').toBe(1);
    expect(sink.charges.get('py-async-A-1001'), 'the asyncio Python test\'s refund reached the payment provider exactly once').toBe(1);
  });
});
