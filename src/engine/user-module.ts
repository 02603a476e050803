// engine/: loads a user's module (`--workflows`) and registers the workflows and tools it exports.
// Must not execute workflows: it imports a module and recognises definitions by their brand.
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

import { DefinitionError } from './author/errors.js';
import { Registry } from './registry.js';
import { isTool } from './author/tool.js';
import { isWorkflow } from './author/workflow.js';

/*
 * `waymark server --workflows ./workflows.ts`: imports a user's module and registers every
 * exported workflow and tool, recognised by their brand symbols (not by instanceof, since the
 * user's `waymark` may be another copy of this package).
 */

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);
const PACKAGE_ROOT = new URL('../index.ts', import.meta.url).href;
let resolverRegistered = false;

/**
 * Lets a module outside this package `import … from 'waymark'` without installing it: when Node
 * cannot resolve the bare name `waymark`, it gets this package's root. An installed `waymark`
 * still wins.
 */
function registerWaymarkResolver(): void {
  if (resolverRegistered) return;
  resolverRegistered = true;
  const hook = `
    const ROOT = ${JSON.stringify(PACKAGE_ROOT)};
    export async function resolve(specifier, context, next) {
      try {
        return await next(specifier, context);
      } catch (err) {
        if (specifier === 'waymark' && err && err.code === 'ERR_MODULE_NOT_FOUND') return next(ROOT, context);
        throw err;
      }
    }`;
  register(`data:text/javascript,${encodeURIComponent(hook)}`, import.meta.url);
}

export interface LoadedModule {
  path: string;
  registry: Registry;
  workflows: string[];
  tools: string[];
}

/**
 * Imports the module at `modulePath` (TypeScript through tsx, JavaScript natively) and registers
 * its exported workflows and tools in `registry` (a new one, with the built-in tools, by default).
 * A module that exports neither is refused, since that is almost always the wrong file.
 */
export async function loadUserModule(modulePath: string, registry: Registry = new Registry()): Promise<LoadedModule> {
  const absolute = path.resolve(modulePath);
  if (!existsSync(absolute)) {
    throw new DefinitionError(`workflows module ${modulePath}`, `no file at ${absolute}; pass the path of a .ts or .js module`);
  }
  registerWaymarkResolver();
  const url = pathToFileURL(absolute).href;
  let mod: Record<string, unknown>;
  try {
    if (TS_EXTENSIONS.has(path.extname(absolute))) {
      const { tsImport } = await import('tsx/esm/api');
      mod = (await tsImport(url, import.meta.url)) as Record<string, unknown>;
    } else {
      mod = (await import(url)) as Record<string, unknown>;
    }
  } catch (err) {
    if (err instanceof DefinitionError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    const hint = /Cannot find module 'waymark'/.test(detail)
      ? '; it was loaded as CommonJS, where a waymark that is not installed cannot be found: name it .mts, add "type": "module" to its package.json, or npm install waymark'
      : '';
    throw new DefinitionError(`workflows module ${modulePath}`, `importing it failed: ${detail.split('\n')[0]}${hint}`);
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
    throw new DefinitionError(`workflows module ${modulePath}`, 'it exports no workflow or tool; export the values returned by defineWorkflow and defineTool');
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
