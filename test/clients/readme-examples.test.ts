import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { readCodeBlocks, type CodeBlock } from '../support/markdown-blocks.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * Each client's README, followed as a newcomer would (issue 30): in a scratch project outside the
 * repository, next to a "checkout" (a symlink to this repository named `waymark`, so the READMEs'
 * `../waymark/clients/…` paths hold as printed), the README's marked blocks run in document order:
 * `<!-- doctest: run -->` shell blocks with bash in the project, `<!-- doctest: file=NAME -->`
 * blocks saved as that file, and a `<!-- doctest: output -->` block compared with what the run
 * before it printed (run ids and refund ids aside, lines in any order). The server is a real `waymark dev` with
 * authentication on, and the commands get nothing of Waymark's but WAYMARK_ADDRESS (the test
 * server is not on the default port) and WAYMARK_TOKEN (its local admin key, as the READMEs have
 * you export it). Editing a README's example into something wrong fails here.
 *
 * Toolchains are steered offline where the README's command would reach a registry, through
 * their own settings, never by changing the commands: npm prefers its cache, pip installs from
 * .venv/wheelhouse (scripts/setup-clients.sh), Go uses its module cache as it does by default.
 */

const root = path.resolve('.');
const wheelhouse = path.join(root, '.venv', 'wheelhouse');
const goAvailable = spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
const pythonReady = existsSync(path.join(wheelhouse, '.stamp')) && spawnSync('python3', ['-m', 'venv', '--help'], { stdio: 'ignore' }).status === 0;

let db: TestDatabase;
let dev: WaymarkProcess;
let dataDir: string;
let address: string;
let token: string;
const scratch: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase('waymark_readme_examples');
  dataDir = await mkdtemp(path.join(tmpdir(), 'waymark-readme-data-'));
  scratch.push(dataDir);
  dev = WaymarkProcess.start(['dev'], { env: { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0', WAYMARK_AUTH: 'on', WAYMARK_DATA_DIR: dataDir } });
  address = await dev.listening();
  token = (await readFile(path.join(dataDir, 'local-admin-key'), 'utf8')).trim();
}, 180_000);

afterAll(async () => {
  await dev?.stop('SIGTERM');
  await db?.drop();
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

/** The environment a newcomer's shell has: no WAYMARK_*, no npm_* of an enclosing `npm test`, no Go workspace. */
function userEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(WAYMARK_|npm_|GOWORK$|VIRTUAL_ENV$|PYTHON)/i.test(k)) continue;
    env[k] = v;
  }
  return {
    ...env,
    npm_config_prefer_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false',
    PIP_NO_INDEX: '1', PIP_FIND_LINKS: wheelhouse, PIP_DISABLE_PIP_VERSION_CHECK: '1',
    WAYMARK_ADDRESS: address, WAYMARK_TOKEN: token,
  };
}

function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => ((stdout += d), (output += d)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, output }));
  });
}

/** Ids that differ on every run: run ids (UUIDs) and the example's refund ids. */
function normalized(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
    .replace(/rf_[0-9a-f]+/g, 'rf_<id>')
    .trimEnd();
}

/** Runs the README's doctest blocks in order in a fresh project; returns what was run, for the test to check. */
async function followReadme(readme: string): Promise<{ ran: CodeBlock[]; compared: number }> {
  // A skipped block never runs: its reason is prose, and a word of it ("… the worker tests run …")
  // must not read as the run flag.
  const blocks = (await readCodeBlocks(path.join(root, readme))).filter(
    (b) => !b.meta.skip && (b.meta.run || b.meta.output || typeof b.meta.file === 'string'),
  );
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-readme-'));
  scratch.push(dir);
  expect(path.relative(root, dir).startsWith('..'), 'the scratch project must be outside the repository').toBe(true);
  await symlink(root, path.join(dir, 'waymark'));
  const app = path.join(dir, 'my-app');
  await mkdir(app);
  const env = userEnv();
  const ran: CodeBlock[] = [];
  let lastStdout: string | undefined;
  let compared = 0;
  for (const block of blocks) {
    const where = `${readme}:${block.line}`;
    if (typeof block.meta.file === 'string') {
      await writeFile(path.join(app, block.meta.file), block.code);
    } else if (block.meta.run) {
      const result = await bash(block.code, app, env);
      expect(result.code, `${where} (${block.code.trim()}) failed:\n${result.output}`).toBe(0);
      lastStdout = result.stdout;
      ran.push(block);
    } else {
      expect(lastStdout, `${where}: an output block needs a run block before it`).toBeDefined();
      // The same lines, in any order: a run's status events and the printed approval can
      // interleave differently from run to run; what each line says may not differ.
      const lines = (text: string): string[] => normalized(text).split('\n').sort();
      expect(lines(lastStdout!), `${where}: the printed output differs from the README's`).toEqual(lines(block.code));
      compared += 1;
    }
  }
  return { ran, compared };
}

function skipUnless(ready: boolean, what: string, skip: (note?: string) => void): void {
  if (ready) return;
  const note = `${what}; run scripts/setup-clients.sh to test this README`;
  console.warn(`readme-examples.test.ts: skipping: ${note}`);
  skip(note);
}

describe('each client README, followed as printed in a scratch project against waymark dev', () => {
  it('TypeScript: npm pack into the project, tsc --init defaults, the refund started, approved and its result read', { timeout: 600_000 }, async () => {
    const { ran, compared } = await followReadme('clients/ts/README.md');
    expect(ran.map((b) => b.code)).toEqual([expect.stringContaining('npm pack ../waymark/clients/ts'), expect.stringContaining('node refund.js')]);
    expect(compared).toBe(1);
    expect(existsSync(path.join(root, 'clients', 'ts', 'waymark-dev-client-0.1.0.tgz')), 'npm pack must leave no tarball in clients/ts').toBe(false);
  });

  it('Python: a virtualenv, pip install of the checkout, the refund started, approved and its result read', { timeout: 600_000 }, async (ctx) => {
    skipUnless(pythonReady, 'The wheelhouse (.venv/wheelhouse) is missing', ctx.skip);
    const { ran, compared } = await followReadme('clients/python/README.md');
    expect(ran.map((b) => b.code)).toEqual([expect.stringContaining('pip install ../waymark/clients/python'), expect.stringContaining('python refund.py')]);
    expect(compared).toBe(1);
  });

  it('Go: a workspace with the checkout (default Go settings), the refund started, approved and its result read', { timeout: 600_000 }, async (ctx) => {
    skipUnless(goAvailable, 'Go is not installed', ctx.skip);
    const { ran, compared } = await followReadme('clients/go/README.md');
    expect(ran.map((b) => b.code)).toEqual([expect.stringContaining('go work init . ../waymark/clients/go'), expect.stringContaining('go run .')]);
    expect(compared).toBe(1);
  });
});
