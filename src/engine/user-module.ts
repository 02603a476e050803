// engine/: loads a user's module (`--workflows`) and registers the workflows and tools it exports.
// Must not execute workflows: it imports a module and recognises definitions by their brand.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import Module, { createRequire, register } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';

import { DefinitionError } from './errors.js';
import { Registry } from './registry.js';
import { isTool } from './author/tool.js';
import { isWorkflow } from './author/workflow.js';

/*
 * `waymark server --workflows ./workflows.ts`: imports a user's module and registers every
 * exported workflow and tool, recognised by their brand symbols (not by instanceof, since the
 * user's `waymark` may be another copy of this package). The module may live in any folder, with
 * or without a package.json (docs/workflows.md "Loading your module"): user-module-hooks.js makes
 * its `.ts` files ES modules and lends it the server's `waymark` and `zod` when it has none.
 */

/** What `--workflows` accepts: TypeScript and JavaScript, ES modules and CommonJS. */
export const MODULE_EXTENSIONS = ['.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.jsx'];
/** What a user's module may import without installing it (user-module-hooks.js has the same list). */
const SHARED_PACKAGES = ['waymark', 'zod'];
/** The hooks' registration, made once per process (loads may run in parallel). */
let hooksRegistered: Promise<void> | null = null;
/** Set by bin/waymark.js once tsx's loader is registered for the whole process. */
const TSX_REGISTERED = Symbol.for('waymark.tsx-registered');

/**
 * Registers the hooks once: `waymark` and `zod` fall back to the server's copies when the user's
 * folder does not resolve them (an installed copy wins), and the user's `.ts` files load as ES
 * modules whatever their package.json says. The fallback resolves from this file, inside the
 * server's package, where `waymark` is the package itself and `zod` its dependency. tsx's loader
 * is registered for the process (unless bin/waymark.js already did), not per import as
 * `tsImport` would: a namespaced import would give the user's module its own copy of every
 * server module, so an error class it imports from `waymark` would not be the engine's.
 */
function registerUserModuleHooks(): Promise<void> {
  hooksRegistered ??= registerHooksNow();
  return hooksRegistered;
}

async function registerHooksNow(): Promise<void> {
  const flags = globalThis as Record<symbol, unknown>;
  if (!flags[TSX_REGISTERED]) {
    const { register: registerTsx } = await import('tsx/esm/api');
    registerTsx();
    flags[TSX_REGISTERED] = true;
  }
  register(new URL('./user-module-hooks.js', import.meta.url), { data: { fallbackParentURL: import.meta.url } });
  // CommonJS (`.cts`, `.cjs`, a `.js` outside "type": "module"): Node 20's require() does not go
  // through those hooks, so the CommonJS resolver is wrapped, for these names only.
  // `require('waymark')` gets this server's own ES module (already loaded) through a CommonJS
  // shim; `require('zod')` gets the user's zod, else the server's (its CommonJS build: another
  // instance, which zod 4 schemas work across).
  // The very module a user's `import 'waymark'` falls back to: the package root, which the hooks
  // resolve from this file ('waymark' names this package: src/index.ts, or dist/src/index.js when
  // built, the same file as '../index.js' in either layout). Imported by its path, lazily (it
  // re-exports this file), so the import rules see this file's one import of the package root
  // (and, through it, of MemoryStore and agent/): the zone forbids it to the engine, this line is the one exception.
  // eslint-disable-next-line import-x/no-restricted-paths, import-x/no-cycle -- the package root for require('waymark'), lazily (above)
  flags[WAYMARK_FOR_REQUIRE] = await import('../index.js');
  const cjs = Module as unknown as { _resolveFilename: CjsResolve };
  const resolveFilename = cjs._resolveFilename;
  const fromServer = createRequire(import.meta.url);
  cjs._resolveFilename = function (this: unknown, request, parent, isMain, options) {
    // waymark is an ES module package, which a CommonJS module cannot require on Node 20 (a
    // copy installed beside it included): require('waymark') always gets the server's.
    if (request === 'waymark') return WAYMARK_SHIM;
    try {
      return resolveFilename.call(this, request, parent, isMain, options);
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'MODULE_NOT_FOUND' || !isSharedPackage(request)) throw err;
      try {
        return fromServer.resolve(request);
      } catch {
        throw err;
      }
    }
  };
}

/** What user-module-waymark.cjs exports: this server's `waymark` module, for CommonJS callers. */
const WAYMARK_FOR_REQUIRE = Symbol.for('waymark.for-require');
const WAYMARK_SHIM = fileURLToPath(new URL('./user-module-waymark.cjs', import.meta.url));

type CjsResolve = (request: string, parent: unknown, isMain: boolean, options: unknown) => string;

function isSharedPackage(request: string): boolean {
  return SHARED_PACKAGES.some((name) => request === name || request.startsWith(`${name}/`));
}

export interface LoadedModule {
  path: string;
  registry: Registry;
  workflows: string[];
  tools: string[];
}

/**
 * Imports the module at `modulePath` (tsx's loader compiles TypeScript) and registers
 * its exported workflows and tools in `registry` (a new one, with the built-in tools, by default).
 * Every failure is a DefinitionError with a one-line message that names the file (and the line,
 * when one is known): a missing file, an extension that is not a module, a syntax error, an
 * import that cannot be found, a throw while the module runs, and a module that exports neither
 * a workflow nor a tool, since that is almost always the wrong file.
 */
export async function loadUserModule(modulePath: string, registry: Registry = new Registry()): Promise<LoadedModule> {
  const absolute = path.resolve(modulePath);
  const what = `workflows module ${modulePath}`;
  if (!existsSync(absolute)) {
    throw new DefinitionError(what, `no file at ${absolute}; pass the path of a ${MODULE_EXTENSIONS.join(', ')} module`);
  }
  if (!statSync(absolute).isFile()) throw new DefinitionError(what, `${absolute} is a directory; pass the path of the module file in it`);
  if (!MODULE_EXTENSIONS.includes(path.extname(absolute))) {
    throw new DefinitionError(what, `${path.basename(absolute)} is not a module; pass a ${MODULE_EXTENSIONS.join(', ')} file`);
  }
  await registerUserModuleHooks();
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (err) {
    // defineWorkflow or defineTool refused a definition while the module ran: say where.
    if (err instanceof DefinitionError) throw new DefinitionError(`workflows module ${userFrame(err) ?? absolute}`, err.message);
    const { where, message } = describeImportFailure(err, absolute);
    throw new DefinitionError(`workflows module ${where}`, message);
  }
  const loaded: LoadedModule = { path: absolute, registry, workflows: [], tools: [] };
  const seen = new Set<unknown>();
  for (const value of exportedValues(mod)) {
    if (seen.has(value)) continue;
    seen.add(value);
    if (isWorkflow(value)) {
      registry.register(value);
      loaded.workflows.push(value.name);
    } else if (isTool(value)) {
      registry.register(value);
      loaded.tools.push(value.name);
    }
  }
  if (loaded.workflows.length === 0 && loaded.tools.length === 0) {
    throw new DefinitionError(what, 'it exports no workflow or tool; export the values returned by defineWorkflow and defineTool');
  }
  return loaded;
}

/** Named exports, plus the members of a default export that is an object or array of definitions. */
function exportedValues(mod: Record<string, unknown>): unknown[] {
  const values: unknown[] = [];
  for (const [name, value] of Object.entries(mod)) {
    if (name === 'default' && value !== null && typeof value === 'object' && !isWorkflow(value) && !isTool(value)) {
      values.push(...Object.values(value as Record<string, unknown>));
    } else {
      values.push(value);
    }
  }
  return values;
}

/**
 * `file:line:column` (as far as it is known) and a one-line message for an import that failed:
 * esbuild's transform errors carry the location in their text, Node's syntax errors in plain
 * JavaScript carry none (so the file is parsed again with `vm` to find it), a throw while the
 * module runs has it in its stack, and a missing package or export is looked up in the importing
 * file's text. Paths are plain paths, without tsx's `?namespace` query.
 */
function describeImportFailure(err: unknown, entry: string): { where: string; message: string } {
  const text = err instanceof Error ? err.message : String(err);
  const transform = /^(.+?):(\d+):(\d+): ERROR: (.*)$/m.exec(text);
  if (transform) {
    // tsx compiles `x.mts` as `x.ts`: report the file the user has.
    const file = sameModule(transform[1]!, entry) ? entry : transform[1]!;
    return { where: `${file}:${transform[2]}:${transform[3]}`, message: transform[4]! };
  }
  const firstLine = text.split('\n')[0]!;
  const notFound = /^Cannot find (?:package|module) '([^']+)'(?: imported from (.+))?/.exec(firstLine);
  if (notFound) {
    const importer = plainPath(notFound[2] ?? requireStackHead(text) ?? entry);
    return { where: withLine(importer, `'${notFound[1]}'`, `"${notFound[1]}"`), message: `cannot find '${notFound[1]}'; install it beside the module (npm install ${packageOf(notFound[1]!)})` };
  }
  const noExport = /^The requested module '([^']+)' does not provide an export named '([^']+)'/.exec(firstLine);
  if (noExport) return { where: withLine(entry, noExport[2]!), message: firstLine };
  if (err instanceof SyntaxError) return { where: syntaxErrorLocation(entry) ?? entry, message: `${err.name}: ${firstLine}` };
  const frame = userFrame(err);
  const name = err instanceof Error ? err.name : 'Error';
  return { where: frame ?? entry, message: `running it threw ${name}: ${firstLine}` };
}

function plainPath(fileOrUrl: string): string {
  const noQuery = fileOrUrl.replace(/\?.*$/, '');
  return noQuery.startsWith('file:') ? fileURLToPath(noQuery) : noQuery;
}

function sameModule(a: string, b: string): boolean {
  const stem = (p: string) => plainPath(p).replace(/\.[cm]?[jt]sx?$/, '');
  return stem(a) === stem(b);
}

function packageOf(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** The first file of a CommonJS "Require stack:" list. */
function requireStackHead(text: string): string | undefined {
  return /\nRequire stack:\n- (.+)/.exec(text)?.[1];
}

/** `file:line` of the first line of `file` that contains one of `needles`, or `file` when none does. */
function withLine(file: string, ...needles: string[]): string {
  try {
    const lines = readFileSync(file, 'utf8').split('\n');
    const index = lines.findIndex((line) => needles.some((n) => line.includes(n)));
    return index < 0 ? file : `${file}:${index + 1}`;
  } catch {
    return file;
  }
}

/** The first stack frame in the user's own files: not Node's, not a dependency's, not the server's. */
function userFrame(err: unknown): string | null {
  if (!(err instanceof Error) || !err.stack) return null;
  const serverRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  for (const line of err.stack.split('\n').slice(1)) {
    const m = /^at (?:.* \()?((?:file:\/\/)?\/[^():?]+)(?:\?[^:)]*)?:(\d+):(\d+)\)?$/.exec(line.trim());
    if (!m) continue;
    const file = plainPath(m[1]!);
    if (file.includes(`${path.sep}node_modules${path.sep}`) || file.startsWith(serverRoot + path.sep)) continue;
    return `${file}:${m[2]}:${m[3]}`;
  }
  return null;
}

/**
 * Where a JavaScript syntax error is: Node's SyntaxError from loading an ES module carries no
 * location, so Node itself checks the file again (`node --check`, only on this failure path) and
 * its first lines say `file:line` with a caret under the column.
 */
function syntaxErrorLocation(file: string): string | null {
  const checked = spawnSync(process.execPath, ['--check', file], { encoding: 'utf8', timeout: 10_000 });
  const lines = (checked.stderr ?? '').split('\n');
  const at = /^(.+):(\d+)$/.exec(lines[0] ?? '');
  if (!at) return null;
  const caret = (lines[2] ?? '').indexOf('^');
  return `${plainPath(at[1]!)}:${at[2]}${caret >= 0 ? `:${caret + 1}` : ''}`;
}
