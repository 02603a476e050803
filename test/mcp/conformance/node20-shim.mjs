// @modelcontextprotocol/conformance 0.1.16 is one bundle built for Node 22: it imports fs.globSync,
// which Node 20 lacks, and uses it only to aggregate result folders (its tier-check command), never
// to run a scenario. This loader hook drops that import so its scenarios run on Node 20, and leaves
// a function that says why should that command ever be reached. Nothing else of the bundle changes.
import { register } from 'node:module';

register('data:text/javascript,' + encodeURIComponent(`
export async function load(url, context, next) {
  const r = await next(url, context);
  if (!url.endsWith('/@modelcontextprotocol/conformance/dist/index.js')) return r;
  const bundle = String(r.source);
  if (!bundle.includes('globSync as o,')) throw new Error('the conformance bundle changed: update test/mcp/conformance/node20-shim.mjs');
  const src = bundle.replace(/^#!.*\\n/, '').replace('globSync as o,', '');
  return { ...r, source: 'const o = () => { throw new Error("fs.globSync needs Node 22"); };\\n' + src, shortCircuit: true };
}`));
