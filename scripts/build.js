// `npm run build`, run by `npm install` itself ("prepare"), so a clone's two Quick start lines stay
// two: the server, the sweeper, the CLI and the shipped examples become JavaScript in dist/
// (dist/src, dist/examples, the same tree as the sources), which bin/waymark.js runs with no
// TypeScript compiler loaded. The TypeScript client the operator commands use (clients/ts, a
// workspace package) gets its JavaScript in clients/ts/dist the same way; its own `npm run build`
// adds the declarations when it is packed.
//
// esbuild transpiles file by file (no bundle: every import.meta.url keeps its meaning), in well
// under a second; types are checked by `npm run typecheck`, not here. Files that are not
// TypeScript (the module hooks, the CommonJS shim, the SQL migrations) are copied as they are.
import { build } from 'esbuild';
import { readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

/** Every file under `dir` (relative to `base`) whose name passes `keep`. */
function files(base, dir, keep) {
  return readdirSync(path.join(base, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && keep(e.name))
    .map((e) => path.relative(base, path.join(e.parentPath, e.name)));
}

const isSource = (name) => /\.(ts|js|cjs|sql)$/.test(name) && !/\.(d|test)\.ts$/.test(name);

/**
 * The `dirs` of `base` into `outdir` (paths kept below `outbase`), from empty so a removed source
 * never lingers. Built beside `outdir` and swapped in by two renames: a process started from dist/
 * while a build runs (a test packing a package rebuilds it) never finds it half empty.
 */
async function transpile(base, dirs, outbase, outdir) {
  const fresh = `${outdir}.building-${process.pid}`;
  const old = `${outdir}.old-${process.pid}`;
  rmSync(fresh, { recursive: true, force: true });
  await build({
    absWorkingDir: base,
    entryPoints: dirs.flatMap((dir) => files(base, dir, isSource)),
    outdir: fresh,
    outbase,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    // The hooks and the shim are already JavaScript (and must stay the files they are).
    loader: { '.js': 'copy', '.cjs': 'copy', '.sql': 'copy' },
    logLevel: 'warning',
  });
  rmSync(old, { recursive: true, force: true });
  try {
    renameSync(outdir, old);
  } catch (error) {
    if (error.code !== 'ENOENT') throw error; // the first build: nothing to set aside
  }
  renameSync(fresh, outdir);
  rmSync(old, { recursive: true, force: true });
}

const started = performance.now();
await Promise.all([
  transpile(root, ['src', 'examples'], '.', path.join(root, 'dist')),
  transpile(path.join(root, 'clients/ts'), ['src'], 'src', path.join(root, 'clients/ts/dist')),
]);
if (process.env.npm_lifecycle_event !== 'prepare') {
  process.stderr.write(`waymark: built dist/ in ${Math.round(performance.now() - started)} ms\n`);
}
