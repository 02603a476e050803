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
 * wipes them) and the local plugins it needs besides node_modules. The clients' generators are
 * installed by scripts/setup-clients.sh into .bin/ (Go) and .venv/ (Python).
 */
const TARGETS = [
  { template: 'buf.gen.yaml', outputs: ['src/gen'], requires: [] },
  {
    template: 'buf.gen.clients.yaml',
    outputs: ['clients/go/gen', 'clients/python/gen', 'clients/ts/src/gen'],
    requires: [
      { file: '.bin/protoc-gen-go', what: 'protoc-gen-go (Go)' },
      { file: '.bin/protoc-gen-go-grpc', what: 'protoc-gen-go-grpc (Go)' },
      { file: '.venv/bin/python', what: 'the Python virtualenv', python: 'grpc_tools.protoc' },
      { file: '.venv/bin/protoc-gen-mypy', what: 'mypy-protobuf (Python)' },
      { file: '.venv/bin/protoc-gen-mypy_grpc', what: 'mypy-protobuf (Python)' },
    ],
  },
];

const SETUP_HINT = 'run `scripts/setup-clients.sh` (needs Go and Python 3; installs pinned generators into .bin/ and .venv/)';

/** What `target` needs and this checkout lacks, as readable phrases; empty when it can run. */
function missingTools(target) {
  const missing = [];
  for (const { file, what, python } of target.requires) {
    if (!existsSync(path.join(root, file))) {
      missing.push(`${what}: ${file} is missing`);
    } else if (python) {
      const probe = spawnSync(path.join(root, file), ['-c', `import ${python}`], { cwd: root, stdio: 'ignore' });
      if (probe.status !== 0) missing.push(`${what}: ${file} cannot import ${python}`);
    }
  }
  return missing;
}

/** Prints what is missing for each target that cannot run; true when every target can. */
function reportMissing(verb) {
  let ok = true;
  for (const target of TARGETS) {
    const missing = missingTools(target);
    if (missing.length === 0) continue;
    ok = false;
    console.error(`generate: cannot ${verb} ${target.outputs.join(', ')} (${target.template}):`);
    for (const line of missing) console.error(`  ${line}`);
    console.error(`  ${SETUP_HINT}`);
  }
  return ok;
}

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
  for (const target of TARGETS) {
    if (missingTools(target).length === 0) buf(['generate', '--template', target.template]);
  }
  // Generate what can be generated, then fail naming the setup step: a proto change with stale
  // clients would only be caught later by `generate:check`.
  if (!reportMissing('regenerate')) process.exit(1);
}

function check() {
  // A check that skipped a target would pass while that target's committed code is stale.
  if (!reportMissing('check')) process.exit(2);
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
      if (stale.some((line) => line.startsWith('clients/'))) {
        console.error('  (client code also differs when .bin/ or .venv/ hold other generator versions than scripts/setup-clients.sh pins; rerun it)');
      }
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
