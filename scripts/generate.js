#!/usr/bin/env node
// Regenerates the code buf produces from proto/ (`npm run generate`), or with --check proves the
// committed output is current (`npm run generate:check`, CI) and lists the stale files.
//
// The check generates into a temporary directory and compares it with the tree instead of
// regenerating in place: `clean: true` empties the output folders first, so an in-place run would
// briefly remove files that concurrently running tests or editors import, and comparing against
// the tree also works before the first commit and outside a git checkout. In CI the tree is the
// commit, so this is the same as "regenerate, then `git status --porcelain` must be empty".
//
// Plain Node with no dependencies so it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import console from 'node:console';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * One entry per buf template, with the folders it writes (they must be generated-only: `clean`
 * wipes them). The polyglot clients join here as
 * `{ template: 'buf.gen.clients.yaml', outputs: ['clients/go/gen', 'clients/python/gen'] }`.
 */
const TARGETS = [
  { template: 'buf.gen.yaml', outputs: ['src/gen'] },
];

function buf(args) {
  const bin = path.join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'buf.cmd' : 'buf');
  if (!existsSync(bin)) {
    console.error(`generate: ${path.relative(root, bin)} is missing; run \`npm ci\` first`);
    process.exit(2);
  }
  const result = spawnSync(bin, args, { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    console.error(`generate: buf ${args.join(' ')} exited with ${result.status ?? result.signal}`);
    process.exit(result.status ?? 1);
  }
}

/** Relative paths of every file under `dir`, or an empty list when it does not exist. */
function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
    .sort();
}

/** Files under `output` that differ between the fresh generation in `base` and the tree. */
function staleFiles(base, output) {
  const fresh = path.join(base, output);
  const current = path.join(root, output);
  const names = new Set([...listFiles(fresh), ...listFiles(current)]);
  const stale = [];
  for (const name of [...names].sort()) {
    const a = path.join(fresh, name);
    const b = path.join(current, name);
    if (!existsSync(a)) stale.push(`${path.join(output, name)} (not generated any more)`);
    else if (!existsSync(b)) stale.push(`${path.join(output, name)} (missing)`);
    else if (!readFileSync(a).equals(readFileSync(b))) stale.push(`${path.join(output, name)} (differs)`);
  }
  return stale;
}

function generate() {
  for (const { template } of TARGETS) buf(['generate', '--template', template]);
}

function check() {
  const base = mkdtempSync(path.join(tmpdir(), 'waymark-generate-'));
  try {
    const stale = [];
    for (const { template, outputs } of TARGETS) {
      buf(['generate', '--template', template, '--output', base]);
      for (const output of outputs) stale.push(...staleFiles(base, output));
    }
    if (stale.length > 0) {
      console.error('generate --check: generated code is out of date with proto/; run `npm run generate` and commit:');
      for (const line of stale) console.error(`  ${line}`);
      process.exit(1);
    }
    console.log('generate --check: generated code is up to date');
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

const args = process.argv.slice(2);
const unknown = args.filter((arg) => arg !== '--check');
if (unknown.length > 0) {
  console.error(`generate: unknown argument ${unknown.join(' ')}; usage: node scripts/generate.js [--check]`);
  process.exit(2);
}
if (args.includes('--check')) check();
else generate();
