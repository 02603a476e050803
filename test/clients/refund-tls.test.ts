import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, createWaymarkClient, RunStatus, type WaymarkClient } from '../../clients/ts/src/index.js';
import { jsonLines, runCli } from '../cli/operator-harness.js';
import { createApiKey } from '../support/api-keys.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { RestartableServer, startChargeSink } from '../support/restartable-server.js';
import { opensslAvailable, TestCertificates } from '../support/test-certificates.js';

/*
 * Issue 19's must-show: the Go, Python and TypeScript clients and the CLI run the refund scenario
 * (start, park on the approval, approve, finish) against one real `waymark server` that serves
 * TLS only (throwaway certificates from openssl) with authentication on, each verifying the
 * server against the test CA and sending an API key of the namespace "payments" with the scopes
 * the scenario needs. Go and Python run their README's refund example (clients/*\/examples),
 * which reads WAYMARK_CA_FILE, WAYMARK_TOKEN and WAYMARK_NAMESPACE as the CLI does. Each also
 * makes the same start without the key (UNAUTHENTICATED, no run written, no refund) and in
 * plaintext (refused: the port speaks TLS only).
 */

const root = path.resolve('.');
const python = path.join(root, '.venv', 'bin', 'python');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
const pythonAvailable = existsSync(python) && spawnSync(python, ['-c', 'import waymark'], { stdio: 'ignore' }).status === 0;
const NAMESPACE = 'payments';

let db: TestDatabase;
let server: RestartableServer;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
let certs: TestCertificates;
let key: string;
/** The TypeScript client as a payments team configures it: the test CA and the key. */
let keyed: WaymarkClient;
/** An empty data dir, so the CLI finds no local key to fall back on. */
let emptyDataDir: string;
let goBinary: string | undefined;

beforeAll(async () => {
  if (!opensslAvailable) return;
  db = await createTestDatabase('waymark_refund_tls');
  sink = await startChargeSink();
  certs = new TestCertificates();
  const serverCert = certs.server();
  server = new RestartableServer({
    DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url, WAYMARK_AUTH: 'on',
    WAYMARK_TLS_CERT_FILE: serverCert.certFile, WAYMARK_TLS_KEY_FILE: serverCert.keyFile,
  });
  await server.start();
  ({ secret: key } = await createApiKey(db.url, { namespace: NAMESPACE, scopes: ['runs:read', 'runs:write', 'approvals:decide'], name: 'refund over TLS' }));
  keyed = createWaymarkClient({ address: server.address, tls: { ca: certs.ca }, token: key, namespace: NAMESPACE });
  emptyDataDir = mkdtempSync(path.join(tmpdir(), 'waymark-no-key-'));
  if (goAvailable) {
    // Built once, so the three runs below do not each compile it.
    goBinary = path.join(certs.dir, 'refund-example');
    const built = spawnSync('go', ['build', '-o', goBinary, './examples/refund'], { cwd: path.join(root, 'clients', 'go'), encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`go build of the refund example failed:\n${built.stderr}`);
  }
}, 300_000);

afterAll(async () => {
  keyed?.close();
  await server?.stop();
  await sink?.close();
  await db?.drop();
  certs?.remove();
  if (emptyDataDir) rmSync(emptyDataDir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  output: string;
}

/** Runs a program with only the given connection variables (none of the shell's WAYMARK_*). */
function runProgram(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<Ran> {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('WAYMARK_')) delete base[k];
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** The runs of the namespace started for `order` (the examples' idempotency key is `refund-<order>`). */
async function runsOf(order: string): Promise<number> {
  let n = 0;
  for await (const run of keyed.listRuns({ workflow: 'refund' })) {
    if (run.input && JSON.stringify(run.input).includes(order)) n += 1;
  }
  return n;
}

function skipWithout(available: boolean, what: string, skip: (note?: string) => void): void {
  if (available) return;
  const note = `${what} is not installed; run scripts/setup-clients.sh to run this client's scenario`;
  console.warn(`refund-tls.test.ts: skipping: ${note}`);
  skip(note);
}

/**
 * One client's example, three times: with the CA and the key (the refund goes through, once),
 * without the key (UNAUTHENTICATED, nothing written) and without TLS (refused by the TLS port).
 */
async function exampleScenario(language: string, command: string, args: (order: string) => string[], cwd: string): Promise<void> {
  const secure = { WAYMARK_CA_FILE: certs.caFile, WAYMARK_NAMESPACE: NAMESPACE };
  const order = `${language}-tls-A-1001`;
  const ok = await runProgram(command, args(order), cwd, { ...secure, WAYMARK_TOKEN: key });
  expect(ok.code, `${language} example failed:\n${ok.output}\nserver:\n${server.tail()}`).toBe(0);
  expect(ok.output).toMatch(/approving: Refund \$42\.5 for order/);
  expect(ok.output).toMatch(/refunded/);
  expect(sink.charges.get(order), 'the refund reached the payment provider exactly once').toBe(1);
  expect(await runsOf(order)).toBe(1);

  const keyless = `${language}-nokey-A-1001`;
  const noKey = await runProgram(command, args(keyless), cwd, secure);
  expect(noKey.code, noKey.output).not.toBe(0);
  expect(noKey.output).toMatch(/unauthenticated\/CREDENTIALS_MISSING/i);
  expect(noKey.output).not.toMatch(/^run /m);
  expect(await runsOf(keyless), 'a refused start writes no run').toBe(0);

  const clear = `${language}-plain-A-1001`;
  const plaintext = await runProgram(command, args(clear), cwd, { WAYMARK_TOKEN: key, WAYMARK_NAMESPACE: NAMESPACE });
  expect(plaintext.code, plaintext.output).not.toBe(0);
  expect(plaintext.output).toMatch(/unavailable/i);
  expect(await runsOf(clear), 'nothing reached the server in the clear').toBe(0);
  expect(sink.charges.has(keyless) || sink.charges.has(clear)).toBe(false);
}

describe.skipIf(!opensslAvailable)('the refund scenario over TLS with an API key of one namespace', { timeout: 180_000 }, () => {
  it('Go: examples/refund with WithTLS(TLSConfig(CAFile)), WithToken and WithNamespace', async (ctx) => {
    skipWithout(goAvailable, 'Go', ctx.skip);
    await exampleScenario('go', goBinary!, (order) => [server.address, order], root);
  });

  it('Python: examples/refund.py with tls=tls_credentials(ca_file=...), token= and namespace=', async (ctx) => {
    skipWithout(pythonAvailable, 'The Python virtualenv (.venv with the client)', ctx.skip);
    await exampleScenario('py', python, (order) => [path.join(root, 'clients', 'python', 'examples', 'refund.py'), server.address, order], root);
  });

  it('TypeScript: createWaymarkClient({ tls: { ca }, token, namespace })', async () => {
    const order = 'ts-tls-A-1001';
    const { run } = await keyed.startRun('refund', { order, amount: 42.5 }, { idempotencyKey: `refund-${order}` });
    expect(run.namespace).toBe(NAMESPACE);
    // Without followSuspended the stream ends when the run parks.
    for await (const event of keyed.events(run.id)) void event;
    expect((await keyed.getRun(run.id)).run.status).toBe(RunStatus.SUSPENDED);
    const approvals = [];
    for await (const a of keyed.listApprovals({ runId: run.id })) approvals.push(a);
    expect(approvals).toHaveLength(1);
    await keyed.approve(approvals[0]!.id, { by: 'ana@example.com' });
    expect(await keyed.result(run.id)).toMatchObject({ status: 'refunded' });
    expect(sink.charges.get(order)).toBe(1);

    const noKey = createWaymarkClient({ address: server.address, tls: { ca: certs.ca }, namespace: NAMESPACE });
    const plaintext = createWaymarkClient({ address: server.address, token: key, namespace: NAMESPACE });
    try {
      await expect(noKey.startRun('refund', { order: 'ts-nokey-A-1001', amount: 42.5 })).rejects.toMatchObject({ code: Code.Unauthenticated, reason: 'CREDENTIALS_MISSING' });
      await expect(plaintext.startRun('refund', { order: 'ts-plain-A-1001', amount: 42.5 }, { retry: false })).rejects.toMatchObject({ code: Code.Unavailable });
    } finally {
      noKey.close();
      plaintext.close();
    }
    expect(await runsOf('ts-nokey-A-1001') + await runsOf('ts-plain-A-1001')).toBe(0);
  });

  it('CLI: runs start --wait, approvals list and complete, runs events --follow with --ca, --token and --namespace', async () => {
    const order = 'cli-tls-A-1001';
    const flags = ['--ca', certs.caFile, '--token', key, '--namespace', NAMESPACE, '-o', 'json'];
    const env = { WAYMARK_DATA_DIR: emptyDataDir };
    const cli = (args: string[]) => runCli([...args, ...flags], { address: server.address, env });

    const started = await cli(['runs', 'start', 'refund', '--input', JSON.stringify({ order, amount: 42.5 }), '--wait']);
    expect(started.code, started.stderr).toBe(0);
    const [parked] = jsonLines<{ run: { id: string; status: string; namespace: string } }>(started.stdout);
    expect(parked!.run).toMatchObject({ status: 'RUN_STATUS_SUSPENDED', namespace: NAMESPACE });
    const runId = parked!.run.id;

    const listed = await cli(['approvals', 'list', '--run', runId]);
    expect(listed.code, listed.stderr).toBe(0);
    const approvals = jsonLines<{ id: string }>(listed.stdout);
    expect(approvals).toHaveLength(1);
    const decided = await cli(['approvals', 'complete', approvals[0]!.id, '--decision', 'approve', '--by', 'ana@example.com']);
    expect(decided.code, decided.stderr).toBe(0);

    const followed = await cli(['runs', 'events', runId, '--follow']);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout).toMatch(/RUN_STATUS_SUCCEEDED/);
    const finished = await cli(['runs', 'get', runId]);
    expect(jsonLines<{ run: { status: string; output: unknown } }>(finished.stdout)[0]!.run).toMatchObject({ status: 'RUN_STATUS_SUCCEEDED', output: { status: 'refunded' } });
    expect(sink.charges.get(order)).toBe(1);

    const input = ['--input', JSON.stringify({ order: 'cli-nokey-A-1001', amount: 42.5 })];
    const noKey = await runCli(['runs', 'start', 'refund', ...input, '--ca', certs.caFile, '--namespace', NAMESPACE], { address: server.address, env });
    expect(noKey.code).toBe(6);
    expect(noKey.stderr).toMatch(/CREDENTIALS_MISSING|no API key|WAYMARK_TOKEN/);
    const plaintext = await runCli(['runs', 'start', 'refund', ...input, '--token', key, '--namespace', NAMESPACE, '--timeout', '2s'], { address: server.address, env });
    expect(plaintext.code).toBe(5);
    expect(plaintext.stderr).toMatch(/one serving TLS needs --tls or --ca FILE/);
    expect(await runsOf('cli-nokey-A-1001')).toBe(0);
  });
});
