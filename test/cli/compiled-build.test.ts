import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { WaymarkProcess } from '../support/waymark-process.js';

/*
 * The compiled build (scripts/build.js, run by `npm install`): an install laid out as the
 * container image is (package.json, bin/ and dist/ only, no src/) whose node_modules lacks tsx
 * and esbuild altogether, so any TypeScript compiler the command tried to load would fail it.
 * `--version`, `waymark server` on a database and an operator command against it all work there.
 */

const ROOT = path.resolve('.');
/** The TypeScript compilers: absent from the copy's node_modules. */
const COMPILERS = new Set(['tsx', 'esbuild', '@esbuild']);

let dir: string;
let db: TestDatabase;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'waymark-compiled-'));
  cpSync(path.join(ROOT, 'package.json'), path.join(dir, 'package.json'));
  cpSync(path.join(ROOT, 'bin'), path.join(dir, 'bin'), { recursive: true });
  cpSync(path.join(ROOT, 'dist/src'), path.join(dir, 'dist/src'), { recursive: true });
  mkdirSync(path.join(dir, 'node_modules'));
  for (const name of readdirSync(path.join(ROOT, 'node_modules'))) {
    if (COMPILERS.has(name) || name.startsWith('.')) continue;
    symlinkSync(path.join(ROOT, 'node_modules', name), path.join(dir, 'node_modules', name));
  }
  db = await createTestDatabase('waymark_compiled');
});

afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

const bin = () => path.join(dir, 'bin/waymark.js');

describe('the compiled build, with no TypeScript compiler installed', () => {
  it('prints its version', () => {
    const run = spawnSync(process.execPath, [bin(), '--version'], { cwd: dir, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^waymark \d+\.\d+\.\d+\n$/);
    expect(run.status).toBe(0);
  });

  it('serves on a database, migrated by `waymark migrate`, and answers an operator command', async () => {
    const env = { DATABASE_URL: db.url, WAYMARK_ADDR: '127.0.0.1:0' };
    const migrate = spawnSync(process.execPath, [bin(), 'migrate'], { cwd: dir, encoding: 'utf8', env: { ...process.env, ...env } });
    expect(migrate.status, migrate.stderr).toBe(0);
    const server = WaymarkProcess.start(['server'], { cwd: dir, bin: bin(), env });
    try {
      const address = await server.listening();
      const list = spawnSync(process.execPath, [bin(), 'workflows', 'list', '--addr', address], { cwd: dir, encoding: 'utf8' });
      expect(list.stderr).toBe('');
      expect(list.status).toBe(0);
      // The server has no workflow (no module, not dev): the empty list says so.
      expect(list.stdout).toBe('no workflows are served\n');
    } finally {
      await server.stop();
    }
    expect(server.stderr).toBe('');
  });
});
