import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Where `npm install` put the built web console (console/dist at the package root, docs/console.md):
 * found by walking up from this file to the package's own package.json, so it is the same from
 * the sources (tsx) and from a compiled build in another folder.
 */
export function consoleBuildDir(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'waymark') {
      return path.join(dir, 'console', 'dist');
    }
    if (path.dirname(dir) === dir) return path.resolve('console', 'dist');
  }
}
