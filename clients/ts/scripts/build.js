// `npm run build` (and `npm pack`, through prepack): compiles src, the wrapper and its generated
// code (src/gen, from `npm run generate` at the repository root), into dist as ESM with .d.ts.
// dist is emptied first, so a file removed from src never lingers in the package.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(path.join(root, 'dist'), { recursive: true, force: true });
const result = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
process.exit(result.status ?? 1);
