// engine/: Node module hooks (node:module register) for a user's --workflows module; user-module.ts registers them.
// Must not import the engine or any package (Node's own modules only): they run on Node's loader thread and only pick URLs and formats.

import { readFileSync } from 'node:fs';
import { fileURLToPath, URL } from 'node:url';
import { compileFunction } from 'node:vm';

/*
 * Two rules, both for modules outside any node_modules folder (the user's own files):
 *
 * 1. `waymark` and `zod` (and their subpaths, `zod/v4`) resolve first as Node would, from the
 *    importing file's folder, so a copy the user installed wins; only when that finds nothing are
 *    they resolved again from the server's own package, so a folder with no node_modules works.
 * 2. A `.ts` or `.tsx` file is an ES module whatever the nearest package.json says (or when there
 *    is none): a workflows file is written with `import` and `export`, and in a folder with no
 *    package.json, or with `"type": "commonjs"`, it would otherwise be compiled to CommonJS,
 *    where top-level await fails. A `.js` or `.jsx` file that would be CommonJS is an ES module
 *    when it cannot compile as a CommonJS body (it has `import`, `export` or top-level await),
 *    as Node's own syntax detection decides for a folder without "type". `.cts` and `.cjs` stay
 *    CommonJS (user-module.ts lends them the fallback of rule 1 through require).
 */

/** Packages a user's module gets from the server when its own folder does not have them. */
const SHARED_PACKAGES = new Set(['waymark', 'zod']);

/** Where the server resolves a shared package from (set by `initialize`): a file inside its package. */
let fallbackParentURL;

export function initialize(data) {
  fallbackParentURL = data?.fallbackParentURL;
}

/** `zod/v4` -> `zod`, `@scope/name/x` -> `@scope/name`; null for relative, absolute and URL specifiers. */
function packageName(specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.includes(':')) return null;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

function isNotFound(err) {
  return err !== null && typeof err === 'object' && (err.code === 'ERR_MODULE_NOT_FOUND' || err.code === 'MODULE_NOT_FOUND');
}

/** The user's own file (not under node_modules) with one of `extensions`, or null. */
function userFile(url, extensions) {
  if (!url.startsWith('file:')) return null;
  const { pathname } = new URL(url);
  return extensions.test(pathname) && !pathname.includes('/node_modules/') ? pathname : null;
}

/** True when the source is not a valid CommonJS body: it uses ES module syntax. */
function hasModuleSyntax(url) {
  try {
    compileFunction(readFileSync(fileURLToPath(url.split('?')[0]), 'utf8'), ['exports', 'require', 'module', '__filename', '__dirname']);
    return false;
  } catch (err) {
    return err instanceof SyntaxError;
  }
}

/** Rule 2: the format a user's file loads with, or null to keep the one resolved. */
function userFormat(resolved) {
  if (resolved.format === 'module') return null;
  if (userFile(resolved.url, /\.tsx?$/)) return 'module';
  if (resolved.format === 'commonjs' && userFile(resolved.url, /\.jsx?$/) && hasModuleSyntax(resolved.url)) return 'module';
  return null;
}

export async function resolve(specifier, context, next) {
  let resolved;
  try {
    resolved = await next(specifier, context);
  } catch (err) {
    if (!fallbackParentURL || !isNotFound(err) || !SHARED_PACKAGES.has(packageName(specifier))) throw err;
    try {
      resolved = await next(specifier, { ...context, parentURL: fallbackParentURL });
    } catch {
      throw err; // the user's own error names their folder, which is where they would look
    }
  }
  const format = userFormat(resolved);
  return format ? { ...resolved, format } : resolved;
}
