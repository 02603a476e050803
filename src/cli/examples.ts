import { readdir } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Registry } from '../engine/index.js';
import { isTool } from '../engine/index.js';
import { isWorkflow } from '../engine/index.js';

/** The examples shipped in the package (`examples/*.ts`), which `waymark dev` registers. */
export const EXAMPLES_DIR = fileURLToPath(new URL('../../examples/', import.meta.url));

/**
 * Registers every workflow and tool the example modules export. Every module in the folder is
 * loaded, so a new example needs no wiring here. A name the user's own module already registered
 * wins: the example is skipped with a log line rather than failing `waymark dev`.
 */
export async function registerExamples(registry: Registry, logger: Logger, dir = EXAMPLES_DIR): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    // An install without the examples folder (a trimmed container image) still starts.
    logger.warn({ dir }, 'no examples folder; waymark dev starts without the examples');
    return [];
  }
  const files = names.filter((f) => /\.(ts|mts|js|mjs)$/.test(f) && !/\.(test|d)\.[mc]?[tj]s$/.test(f)).sort();
  const registered: string[] = [];
  for (const file of files) {
    const mod = (await import(pathToFileURL(path.join(dir, file)).href)) as Record<string, unknown>;
    for (const value of Object.values(mod)) {
      if (!isWorkflow(value) && !isTool(value)) continue;
      try {
        registry.register(value);
        if (isWorkflow(value)) registered.push(value.name);
      } catch {
        logger.warn({ example: file, name: value.name }, 'an example is not registered: the workflows module already uses its name');
      }
    }
  }
  return registered;
}
