// Lint: no import cycle among our TypeScript files, counting `import type` edges as import-x/no-cycle does not.
// A type-only cycle still ties two files into one unit to read and to change; STYLE.md says imports point down.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/*
 * import-x/no-cycle skips type-only imports by design (they vanish at run time) and has no option to
 * count them. This rule draws the graph of src/ (every static import and export-from, type-only
 * included, relative specifiers only) and reports an import of the linted file that lands in the
 * same strongly connected component. The linted file's own edges come from the text being linted,
 * so a probe file in a test (ESLint lintText) is checked like a file on disk. The graph of the other
 * files is read once per process: a long-running editor session may see a stale graph until restart.
 */

const SPECIFIER = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*['"](\.[^'"]+)['"]/g;

/** The relative specifiers a file imports or re-exports, type-only ones included. */
function specifiers(text) {
  const found = [];
  for (const m of text.matchAll(SPECIFIER)) found.push(m[1]);
  return found;
}

/** The .ts file a relative specifier names (`./x.js` -> `./x.ts`), or null when none exists in `files`. */
function resolveSpecifier(from, spec, files) {
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base, `${base}.ts`, path.join(base, 'index.ts')]) {
    if (files.has(candidate)) return candidate;
  }
  return null;
}

function tsFiles(dir, out = []) {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, d.name);
    if (d.isDirectory()) {
      if (d.name !== 'gen' && d.name !== 'node_modules') tsFiles(full, out);
    } else if (d.name.endsWith('.ts')) out.push(full);
  }
  return out;
}

const graphs = new Map();

/** Every file under `root` -> the files it imports (resolved), read from disk once. */
function diskGraph(root) {
  let graph = graphs.get(root);
  if (graph) return graph;
  const files = new Set(tsFiles(root));
  graph = new Map();
  for (const file of files) {
    const targets = specifiers(readFileSync(file, 'utf8')).map((s) => resolveSpecifier(file, s, files)).filter(Boolean);
    graph.set(file, new Set(targets));
  }
  graphs.set(root, graph);
  return graph;
}

/** Whether `to` reaches `from` in `graph` (so the edge from -> to closes a cycle), and the way back. */
function pathBack(graph, to, from) {
  const previous = new Map([[to, null]]);
  const queue = [to];
  while (queue.length > 0) {
    const at = queue.shift();
    for (const next of graph.get(at) ?? []) {
      if (previous.has(next)) continue;
      previous.set(next, at);
      if (next === from) {
        const way = [];
        for (let n = at; n !== null; n = previous.get(n)) way.unshift(n);
        return way;
      }
      queue.push(next);
    }
  }
  return null;
}

/** @type {import('eslint').Rule.RuleModule} */
export const noImportCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid import cycles among source files, type-only imports included.' },
    schema: [{ type: 'object', properties: { root: { type: 'string' } }, additionalProperties: false }],
    messages: { cycle: 'Import cycle (type-only imports count): {{way}}' },
  },
  create(context) {
    const root = path.resolve(context.cwd, context.options[0]?.root ?? 'src');
    const file = path.resolve(context.cwd, context.filename);
    if (!file.startsWith(root + path.sep)) return {};
    const graph = new Map(diskGraph(root));
    const files = new Set([...graph.keys(), file]);
    const check = (node) => {
      const spec = node.source?.value;
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = resolveSpecifier(file, spec, files);
      if (!target || target === file) return;
      // This file's edges as linted now, not as on disk.
      graph.set(file, new Set(specifiers(context.sourceCode.text).map((s) => resolveSpecifier(file, s, files)).filter(Boolean)));
      const way = pathBack(graph, target, file);
      if (way) context.report({ node, messageId: 'cycle', data: { way: [file, ...way, file].map((f) => path.relative(root, f)).join(' -> ') } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};
