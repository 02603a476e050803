import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/database.js';
import { RestartableServer, startChargeSink } from '../../../test/support/restartable-server.js';

// The package as a team outside this repository gets it: `npm pack` builds the tarball
// (prepack: scripts/build.js), a fresh npm project in a temporary directory installs it with
// TypeScript, compiles examples/refund.ts with `tsc --init` defaults (exactOptionalPropertyTypes,
// verbatimModuleSyntax, no Node types) and runs the output with plain node against a live
// server. A tarball missing its build, its declarations or a dependency fails here.

const pkgDir = path.resolve('clients/ts');
const typescriptVersion = (createRequire(import.meta.url)('typescript/package.json') as { version: string }).version;

let scratch: string;
let db: TestDatabase;
let server: RestartableServer;
let sink: Awaited<ReturnType<typeof startChargeSink>>;

/** The environment without the npm_* variables of an enclosing `npm test`, which would steer the inner npm. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.toLowerCase().startsWith('npm_')) env[k] = v;
  return { ...env, ...extra };
}

function run(command: string, args: string[], cwd: string, env = cleanEnv()): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => ((stdout += d), (output += d)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, output }));
  });
}

/** Runs a command that must succeed; resolves with its stdout. */
async function ok(command: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const r = await run(command, args, cwd, env);
  expect(r.code, `${command} ${args.join(' ')} in ${cwd} failed:\n${r.output}`).toBe(0);
  return r.stdout;
}

beforeAll(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'waymark-ts-package-'));
  db = await createTestDatabase('waymark_ts_package');
  sink = await startChargeSink();
  server = new RestartableServer({ DATABASE_URL: db.url, WAYMARK_EXAMPLE_SINK_URL: sink.url });
  await server.start();
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await sink?.close();
  await db?.drop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('the built TypeScript package', () => {
  it('installs into a fresh project outside the repo, compiles the refund example with tsc --init defaults and runs it with node', { timeout: 420_000 }, async () => {
    // prepack (the build) prints its own lines first; the JSON report is the rest.
    const report = await ok('npm', ['pack', '--json', '--pack-destination', scratch], pkgDir);
    const packed = JSON.parse(report.slice(report.search(/^\[/m))) as [{ filename: string; files: { path: string }[] }];
    const files = packed[0].files.map((f) => f.path);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files.filter((f) => f.startsWith('test/'))).toEqual([]);
    const tarball = path.join(scratch, path.basename(packed[0].filename));

    const app = path.join(scratch, 'app');
    await ok('mkdir', [app], scratch);
    await ok('npm', ['init', '-y'], app);
    await ok('npm', ['pkg', 'set', 'type=module'], app);
    await ok('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, `typescript@${typescriptVersion}`], app);
    await ok('npx', ['tsc', '--init'], app);
    const tsconfig = readFileSync(path.join(app, 'tsconfig.json'), 'utf8');
    expect(tsconfig).toMatch(/"exactOptionalPropertyTypes": true/);
    copyFileSync(path.join(pkgDir, 'examples', 'refund.ts'), path.join(app, 'refund.ts'));
    await ok('npx', ['tsc'], app);
    // The package's own declarations, checked too (tsc --init skips libraries' .d.ts files).
    await ok('npx', ['tsc', '--noEmit', '--skipLibCheck', 'false'], app);

    const output = await ok(process.execPath, ['refund.js'], app, cleanEnv({ WAYMARK_ADDRESS: server.address }));
    expect(output).toMatch(/^run [0-9a-f-]{36}$/m);
    expect(output).toMatch(/approving: Refund \$42\.5 for order A-1001\?/);
    expect(output).toMatch(/run SUCCEEDED/);
    expect(output).toMatch(/^result: \{"status":"refunded","refundId":"[^"]+"\}$/m);
    expect(sink.charges.get('A-1001'), 'the example refunded the order once').toBe(1);
  });
});
