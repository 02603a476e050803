import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { RunService } from '../../src/gen/waymark/v1/run_service_pb.js';
import { json, plain } from '../server/api-harness.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * `waymark server --workflows FILE` as a new user runs it: the module sits in a folder of its own
 * under the system's temp directory (outside this package), with or without a package.json, and
 * imports `waymark` and `zod` without having installed them (docs/workflows.md "Loading your
 * module"). Each case starts the real command, starts a run over the API and waits for its output.
 */

const folders: string[] = [];
afterAll(async () => {
  await Promise.all(folders.map((f) => rm(f, { recursive: true, force: true })));
});

/** A new folder holding `files` (name -> text); node_modules/zod gets `zodFrom` copied in when given. */
async function userFolder(files: Record<string, string>, zodFrom?: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'waymark-user-'));
  folders.push(dir);
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  if (zodFrom) {
    await mkdir(path.join(dir, 'node_modules'));
    await cp(path.resolve('node_modules', zodFrom), path.join(dir, 'node_modules', 'zod'), { recursive: true });
  }
  return dir;
}

/**
 * An ES module as a user writes it: it imports `waymark` and `zod`, awaits at top level (which a
 * module compiled to CommonJS cannot), and reports which zod it got (its version).
 */
function esmWorkflow(zod = 'zod'): string {
  return `import { defineWorkflow } from 'waymark';
import { z } from '${zod}';

const salutation = await Promise.resolve('hello');

export const hello = defineWorkflow(
  { name: 'hello', input: z.object({ name: z.string().describe('who to greet') }) },
  async (ctx, { name }) => {
    const loud = await ctx.step('shout', async () => name.toUpperCase());
    return { greeting: salutation + ' ' + loud, zod: z.core.version.major + '.' + z.core.version.minor };
  },
);
`;
}

/** The same workflow as CommonJS, written with `import` (a .cts) or with `require` (a .cjs). */
const CTS_WORKFLOW = `import { defineWorkflow } from 'waymark';
import { z } from 'zod';

export const hello = defineWorkflow({ name: 'hello', input: z.object({ name: z.string() }) }, async (ctx, { name }) => {
  const loud = await ctx.step('shout', async () => name.toUpperCase());
  return { greeting: 'hello ' + loud, zod: z.core.version.major + '.' + z.core.version.minor, commonjs: typeof module === 'object' };
});
`;
const CJS_WORKFLOW = `const { defineWorkflow } = require('waymark');
const { z } = require('zod');

exports.hello = defineWorkflow({ name: 'hello', input: z.object({ name: z.string() }) }, async (ctx, { name }) => {
  const loud = await ctx.step('shout', async () => name.toUpperCase());
  return { greeting: 'hello ' + loud, zod: z.core.version.major + '.' + z.core.version.minor, commonjs: typeof module === 'object' };
});
`;
/** A default export holding the definitions, as the loader accepts besides named exports. */
const DEFAULT_EXPORT = `import { defineWorkflow } from 'waymark';
import { z } from 'zod';

const hello = defineWorkflow({ name: 'hello', input: z.object({ name: z.string() }) }, async (ctx, { name }) => {
  const loud = await ctx.step('shout', async () => name.toUpperCase());
  return { greeting: 'hello ' + loud, zod: z.core.version.major + '.' + z.core.version.minor };
});
export default { hello };
`;

const SERVER_ZOD = '4.6';

/**
 * Starts `waymark server --workflows FILE` (or `dev`) in `dir` (the memory store), starts a run and
 * returns its output. `file` is relative to `dir`, or absolute.
 */
async function runHello(dir: string, file: string, command: 'server' | 'dev' = 'server'): Promise<unknown> {
  const p = WaymarkProcess.start([command, '--workflows', path.isAbsolute(file) ? file : `./${file}`], {
    cwd: dir,
    env: { DATABASE_URL: 'memory:', WAYMARK_ADDR: '127.0.0.1:0' },
  });
  try {
    const address = await p.listening();
    expect(p.logs.find((l) => l.msg === 'workflows module loaded')).toMatchObject({ path: path.resolve(dir, file), workflows: ['hello'] });
    const client = createClient(RunService, createGrpcTransport({ baseUrl: `http://${address}` }));
    const { run } = await client.startRun({ workflow: 'hello', input: json({ name: 'ada' }), wait: true, idempotencyKey: 'first' });
    expect(run?.status).toBe(RunStatus.SUCCEEDED);
    return plain(run?.output);
  } finally {
    await p.stop();
  }
}

describe('waymark server --workflows loads a module from a folder of its own', () => {
  it.each([
    ['no package.json', {}],
    ['a package.json without "type"', { 'package.json': JSON.stringify({ name: 'my-flows', version: '1.0.0' }) }],
    ['a CommonJS package.json', { 'package.json': JSON.stringify({ name: 'my-flows', type: 'commonjs' }) }],
    ['a module package.json', { 'package.json': JSON.stringify({ name: 'my-flows', type: 'module' }) }],
  ])('a workflows.ts beside %s, with the server\'s waymark and zod', async (_, files) => {
    const dir = await userFolder({ ...files, 'workflows.ts': esmWorkflow() });
    expect(await runHello(dir, 'workflows.ts')).toEqual({ greeting: 'hello ADA', zod: SERVER_ZOD });
  }, 90_000);

  it('waymark dev on a module mounted as a Kubernetes ConfigMap mounts one (symlinks into a ..data folder, no package.json)', async () => {
    const mount = await userFolder({});
    await mkdir(path.join(mount, '..2026_12_01_10_00_00.1'));
    await writeFile(path.join(mount, '..2026_12_01_10_00_00.1', 'workflows.ts'), esmWorkflow());
    await symlink('..2026_12_01_10_00_00.1', path.join(mount, '..data'));
    await symlink('..data/workflows.ts', path.join(mount, 'workflows.ts'));
    const elsewhere = await userFolder({});
    expect(await runHello(elsewhere, path.join(mount, 'workflows.ts'), 'dev')).toEqual({ greeting: 'hello ADA', zod: SERVER_ZOD });
  }, 90_000);

  it('the zod the user installed wins, and its schemas work with defineWorkflow (zod 4.1 beside a 4.6 server)', async () => {
    const dir = await userFolder(
      { 'package.json': JSON.stringify({ name: 'my-flows', dependencies: { zod: '4.1.13' } }), 'workflows.ts': esmWorkflow() },
      'zod-v4-1',
    );
    expect(await runHello(dir, 'workflows.ts')).toEqual({ greeting: 'hello ADA', zod: '4.1' });
  }, 90_000);

  it('zod 3.25 installed: its zod/v4 schemas work', async () => {
    const dir = await userFolder({ 'workflows.ts': esmWorkflow('zod/v4') }, 'zod-v3');
    expect(await runHello(dir, 'workflows.ts')).toEqual({ greeting: 'hello ADA', zod: '4.0' });
  }, 90_000);

  it.each([
    ['workflows.mts', esmWorkflow(), { greeting: 'hello ADA', zod: SERVER_ZOD }],
    ['workflows.mjs', esmWorkflow(), { greeting: 'hello ADA', zod: SERVER_ZOD }],
    ['workflows.js', esmWorkflow(), { greeting: 'hello ADA', zod: SERVER_ZOD }],
    ['workflows.cts', CTS_WORKFLOW, { greeting: 'hello ADA', zod: SERVER_ZOD, commonjs: true }],
    ['workflows.cjs', CJS_WORKFLOW, { greeting: 'hello ADA', zod: SERVER_ZOD, commonjs: true }],
    ['require.js', CJS_WORKFLOW, { greeting: 'hello ADA', zod: SERVER_ZOD, commonjs: true }],
    ['defaults.ts', DEFAULT_EXPORT, { greeting: 'hello ADA', zod: SERVER_ZOD }],
  ])('%s in a folder with no package.json', async (file, text, output) => {
    const dir = await userFolder({ [file]: text });
    expect(await runHello(dir, file)).toEqual(output);
  }, 90_000);
});

describe('a workflows module that cannot be loaded', () => {
  const schema = "import { defineWorkflow } from 'waymark';\nimport { z } from 'zod';\n\n";
  it.each([
    ['missing.ts', null, /^workflows module \.\/missing\.ts: no file at \S+missing\.ts; pass the path of a \.ts, /],
    ['syntax.ts', `${schema}export const hello = defineWorkflow({ name: 'hello', input: z.object({}) } async () => 1);\n`,
      /^workflows module \S+syntax\.ts:4:75: Expected "\)" but found "async"$/],
    ['syntax.mjs', 'export const a = 1;\nexport const b = ;\n', /^workflows module \S+syntax\.mjs:2:18: SyntaxError: Unexpected token ';'$/],
    ['throws.ts', "const a = 1;\n\nthrow new Error('no API key for the billing system');\nexport { a };\n",
      /^workflows module \S+throws\.ts:3:7: running it threw Error: no API key for the billing system$/],
    ['imports.ts', "import { defineWorkflow } from 'waymark';\nimport { Client } from 'billing-sdk';\nexport { defineWorkflow, Client };\n",
      /^workflows module \S+imports\.ts:2: cannot find 'billing-sdk'; install it beside the module \(npm install billing-sdk\)$/],
    ['nothing.ts', 'export const answer = 42;\n', /^workflows module \S+nothing\.ts: it exports no workflow or tool; export the values returned by defineWorkflow/],
    ['zod3.ts', `${schema}export const hello = defineWorkflow({ name: 'hello', input: z.object({}) }, async () => 1);\n`,
      /^workflows module \S+zod3\.ts:4:22: workflow "hello": input is a zod 3 schema, and waymark needs zod 4: /],
  ])('%s: one line naming the file and line, exit 78, before any database is started', async (file, text, expected) => {
    const dir = await userFolder(text === null ? {} : { [file]: text }, file === 'zod3.ts' ? 'zod-v3' : undefined);
    // No DATABASE_URL: a server that got as far as the database would start an embedded one here.
    const p = WaymarkProcess.start(['server', '--workflows', `./${file}`], { cwd: dir, env: { DATABASE_URL: undefined, WAYMARK_ADDR: '127.0.0.1:0' } });
    const { code } = await p.exited;
    expect(code).toBe(78);
    const lines = p.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.replace(/^waymark: /, '')).toMatch(expected);
    expect(p.logs.some((l) => /PostgreSQL|migrat|listening/.test(String(l.msg)))).toBe(false);
    expect(existsSync(path.join(dir, '.waymark'))).toBe(false);
  }, 60_000);
});
