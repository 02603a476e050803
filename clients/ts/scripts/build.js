// `npm run build` (and `npm pack`, through prepack): compiles src, the wrapper and its generated
// code (src/gen, from `npm run generate` at the repository root), into dist as ESM with .d.ts.
// It compiles into a fresh folder beside dist and then swaps the two, so a file removed from src
// never lingers in the package, and a process loading dist meanwhile (the CLI's tests run while
// the package test packs) never finds it empty.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const dist = path.join(root, 'dist');
const fresh = mkdtempSync(path.join(root, '.dist-'));
const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json'), '--outDir', fresh], { stdio: 'inherit' });
if (result.status !== 0) {
  rmSync(fresh, { recursive: true, force: true });
  process.exit(result.status ?? 1);
}
// Two renames: dist is missing only between them, not for the whole compile.
const old = `${fresh}-old`;
try {
  renameSync(dist, old);
} catch (err) {
  if (err.code !== 'ENOENT') throw err;
}
renameSync(fresh, dist);
rmSync(old, { recursive: true, force: true });
