#!/usr/bin/env node
// Summarises V8 CPU profiles (`node --cpu-prof`, `npm run bench:profile`): self time by area and by function.
// Usage: node scripts/cpuprofile-summary.js [--top N] [--json] [--with-loading] FILE.cpuprofile...
import { readFileSync } from 'node:fs';
import path from 'node:path';
import process from 'node:process';

/*
 * Each sample's time goes to the function on top of the stack (self time), and that function to an
 * area: a package under node_modules (by name), a folder of src/ (`src/engine/runtime`), a Node
 * built-in module (`node:http2`), or V8's own buckets (GC, idle, program). Several profiles (one per
 * process, or several processes of one role) are summed. Shares are of the busy time: idle excluded,
 * and module loading (any sample with Node's module loader on its stack: start-up, not the work
 * measured) counted apart unless --with-loading.
 */

const args = process.argv.slice(2);
if (args.length === 0 || args.includes('--help') || args.includes('-h')) {
  process.stdout.write('usage: node scripts/cpuprofile-summary.js [--top N] [--json] [--with-loading] FILE.cpuprofile...\n');
  process.exit(args.length === 0 ? 2 : 0);
}
let top = 15;
let json = false;
let withLoading = false;
const files = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--top') top = Number(args[++i]);
  else if (args[i] === '--json') json = true;
  else if (args[i] === '--with-loading') withLoading = true;
  else files.push(args[i]);
}
if (!Number.isInteger(top) || top <= 0) {
  process.stderr.write('--top takes a whole number above 0\n');
  process.exit(2);
}

/** The area a frame's script belongs to. */
function areaOf(url, functionName) {
  if (!url) {
    if (functionName === '(garbage collector)') return 'gc';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'v8 and native';
    return 'native';
  }
  const nm = url.lastIndexOf('/node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + '/node_modules/'.length).split('/');
    return `pkg ${rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (url.startsWith('node:')) {
    const name = url.slice('node:'.length).replace(/^internal\//, '').split('/');
    return `node:${name[0] === 'deps' ? name[1] : name[0]}`;
  }
  const file = url.replace(/^file:\/\//, '');
  const src = file.lastIndexOf('/src/');
  const dist = file.lastIndexOf('/dist/');
  const at = Math.max(src, dist);
  if (at >= 0) {
    const rel = file.slice(at + 1).split('/');
    return rel.slice(0, Math.min(rel.length - 1, 3)).join('/').replace(/^dist\//, 'src/');
  }
  return path.basename(file);
}

const areas = new Map();
const functions = new Map();
let totalUs = 0;
let idleUs = 0;
let loadingUs = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const loadingMemo = new Map();
  const isLoading = (id) => {
    if (loadingMemo.has(id)) return loadingMemo.get(id);
    const url = byId.get(id)?.callFrame.url ?? '';
    const up = parent.get(id);
    const result = url.startsWith('node:internal/modules/') || url.startsWith('node:internal/bootstrap/') || (up !== undefined && isLoading(up));
    loadingMemo.set(id, result);
    return result;
  };
  const dts = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const dt = dts[i + 1] ?? 0;
    if (!node || dt <= 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const area = areaOf(url, functionName);
    totalUs += dt;
    if (area === 'idle') {
      idleUs += dt;
      continue;
    }
    if (!withLoading && isLoading(node.id)) {
      loadingUs += dt;
      continue;
    }
    areas.set(area, (areas.get(area) ?? 0) + dt);
    const fn = `${functionName || '(anonymous)'} ${url ? `${url.replace(/^.*\/(node_modules|src|dist)\//, '$1/').replace(/^node:internal\//, 'node:')}:${lineNumber + 1}` : ''}`.trim();
    functions.set(fn, (functions.get(fn) ?? 0) + dt);
  }
}
const busyUs = totalUs - idleUs - loadingUs;
const ranked = (map) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, top).map(([name, us]) => ({ name, ms: us / 1000, share: us / busyUs }));
const summary = { files: files.length, totalMs: totalUs / 1000, busyMs: busyUs / 1000, idleShare: totalUs ? idleUs / totalUs : 0, loadingMs: loadingUs / 1000, areas: ranked(areas), functions: ranked(functions) };
if (json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const pct = (x) => `${(x * 100).toFixed(1).padStart(5)} %`;
  process.stdout.write(`${files.length} profile(s): ${summary.totalMs.toFixed(0)} ms sampled, ${summary.busyMs.toFixed(0)} ms busy (idle ${pct(summary.idleShare).trim()}${withLoading ? '' : `; module loading, ${summary.loadingMs.toFixed(0)} ms, left out`})\n\nself time by area (share of busy):\n`);
  for (const a of summary.areas) process.stdout.write(`${pct(a.share)} ${a.ms.toFixed(0).padStart(7)} ms  ${a.name}\n`);
  process.stdout.write('\nself time by function:\n');
  for (const f of summary.functions) process.stdout.write(`${pct(f.share)} ${f.ms.toFixed(0).padStart(7)} ms  ${f.name}\n`);
}
