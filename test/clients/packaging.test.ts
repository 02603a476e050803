import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { RestartableServer, startChargeSink } from '../support/restartable-server.js';

/*
 * The Go and Python clients as a team outside this repository uses them: built (the wheel) or
 * referenced (the Go module, through the `replace` of clients/go/README.md), used from a fresh
 * project in a temporary folder, type-checked there (`mypy --strict`, `go vet`), and the refund
 * example run from it against a live `waymark server`. A wheel missing a module or a dependency,
 * stubs that leave `mypy --strict` unhappy, or a module path that does not resolve fail here.
 * Offline: the fresh virtualenv installs with --no-index from .venv/wheelhouse and the Go module
 * from the module cache, both filled by scripts/setup-clients.sh.
 */

const root = path.resolve('.');
const venvPython = path.join(root, '.venv', 'bin', 'python');
const wheelhouse = path.join(root, '.venv', 'wheelhouse');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
const pythonReady = existsSync(venvPython) && existsSync(path.join(wheelhouse, '.stamp'))
  && spawnSync(venvPython, ['-c', 'import hatchling'], { stdio: 'ignore' }).status === 0;

let db: TestDatabase;
let server: RestartableServer;
let sink: Awaited<ReturnType<typeof startChargeSink>>;
const scratch: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_packaging');
  sink = await startChargeSink();
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url });
  await server.start();
});

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await db?.drop();
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  output: string;
}

/** Runs a command to its end; its stdout and stderr together. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

/** Runs a step and fails the test with its output unless it exits 0. */
async function step(what: string, command: string, args: string[], cwd: string, env?: Record<string, string>): Promise<string> {
  const ran = await run(command, args, cwd, env);
  expect(ran.code, `${what} failed:\n${ran.output}`).toBe(0);
  return ran.output;
}

async function scratchDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  scratch.push(dir);
  expect(path.relative(root, dir).startsWith('..'), 'the scratch project must be outside the repository').toBe(true);
  return dir;
}

function skipWithout(ready: boolean, what: string, skip: (note?: string) => void): void {
  if (ready) return;
  const note = `${what}; run scripts/setup-clients.sh to test this client's packaging`;
  console.warn(`packaging.test.ts: skipping: ${note}`);
  skip(note);
}

/** The refund example's output: it parked, was approved and ended with a refund id. */
function expectRefunded(output: string): void {
  expect(output).toMatch(/approving: Refund \$42\.5 for order/);
  expect(output).toMatch(/result: .*refund/i);
  expect(output).toMatch(/refunded/);
}

describe('the clients as packages, from a fresh project outside the repository', () => {
  it('Python: the wheel in a fresh virtualenv, mypy --strict on the refund, worker, refund-flow and schedule examples, then the example against a live server', { timeout: 300_000 }, async (ctx) => {
    skipWithout(pythonReady, 'The Python virtualenv or its wheelhouse (.venv/wheelhouse) is missing', ctx.skip);
    const dir = await scratchDir('waymark-py-app-');
    const dist = path.join(dir, 'dist');
    await step('pip wheel', venvPython, ['-m', 'pip', 'wheel', '--quiet', '--no-deps', '--no-build-isolation', '-w', dist, path.join(root, 'clients', 'python')], root);
    const wheels = (await readdir(dist)).filter((f) => f.endsWith('.whl'));
    expect(wheels).toHaveLength(1);

    const venv = path.join(dir, 'venv');
    await step('python -m venv', 'python3', ['-m', 'venv', venv], dir);
    const bin = (name: string) => path.join(venv, 'bin', name);
    // --no-index: only what the wheel declares (and mypy) gets installed, from the wheelhouse.
    await step('pip install of the wheel', bin('pip'), ['install', '--quiet', '--no-index', '--find-links', wheelhouse, path.join(dist, wheels[0]!), 'mypy==2.4.1'], dir);
    const where = await step('import waymark', bin('python'), ['-c', 'import waymark, waymark.v1.run_pb2; print(waymark.__file__)'], dir);
    expect(path.relative(venv, where.trim()).startsWith('..'), `waymark must come from the fresh virtualenv, not ${where}`).toBe(false);

    const app = path.join(dir, 'app');
    await mkdir(app);
    await copyFile(path.join(root, 'clients', 'python', 'examples', 'refund.py'), path.join(app, 'refund.py'));
    // The worker example too: the decorator keeps the tool's type, the Task is typed.
    await copyFile(path.join(root, 'clients', 'python', 'examples', 'worker.py'), path.join(app, 'worker.py'));
    // And the flow example: flows.register's types, and PyYAML's stubs, come with the wheel's dependencies.
    await copyFile(path.join(root, 'clients', 'python', 'examples', 'refund_flow.py'), path.join(app, 'refund_flow.py'));
    // And the schedule example: client.schedules' keyword arguments.
    await copyFile(path.join(root, 'clients', 'python', 'examples', 'schedule.py'), path.join(app, 'schedule.py'));
    const checked = await step('mypy --strict', bin('mypy'), ['--strict', '--no-incremental', 'refund.py', 'worker.py', 'refund_flow.py', 'schedule.py'], app);
    expect(checked).toMatch(/Success: no issues found/);

    const output = await step('the refund example', bin('python'), ['refund.py', server.address, 'py-pkg-A-1001'], app);
    expectRefunded(output);
    expect(sink.charges.get('py-pkg-A-1001'), 'the refund reached the payment provider exactly once').toBe(1);
  });

  it('Go: a fresh module using the client through replace, go vet, then the refund example against a live server', { timeout: 300_000 }, async (ctx) => {
    skipWithout(goAvailable, 'Go is not installed', ctx.skip);
    const dir = await scratchDir('waymark-go-app-');
    await copyFile(path.join(root, 'clients', 'go', 'examples', 'refund', 'main.go'), path.join(dir, 'main.go'));
    // Offline, from the module cache scripts/setup-clients.sh filled; no checksum database is
    // reachable here, so sums come from that cache too.
    const env = { GOPROXY: 'off', GOSUMDB: 'off', GOWORK: 'off', GOFLAGS: '-mod=mod' };
    await step('go mod init', 'go', ['mod', 'init', 'example.com/refund-app'], dir, env);
    // The two lines of clients/go/README.md ("From a checkout").
    await step('go mod edit -replace', 'go', ['mod', 'edit', '-replace', `github.com/waymark-dev/waymark/clients/go=${path.join(root, 'clients', 'go')}`], dir, env);
    await step('go get', 'go', ['get', 'github.com/waymark-dev/waymark/clients/go/waymark'], dir, env);
    await step('go vet', 'go', ['vet', './...'], dir, env);
    const output = await step('the refund example', 'go', ['run', '.', server.address, 'go-pkg-A-1001'], dir, env);
    expectRefunded(output);
    expect(sink.charges.get('go-pkg-A-1001'), 'the refund reached the payment provider exactly once').toBe(1);
  });
});
