// replay/: the static rules a tenant's JSON Schema passes before it is compiled: depth, keys, references, patterns.
// Pure: must not compile or run a schema, touch a store or do I/O; one iterative walk, linear in the schema's size, so no schema can deepen a recursion of ours.
import { RE2JS } from 're2js';
import type { Json } from '../../journal/run.js';

/*
 * schema-compiler.ts says why: nothing a schema names may reach outside it, and no schema may make
 * a validator loop. A `$ref` cycle that never moves into a part of the value (`{"$ref": "#"}` at
 * the root, or two `$defs` that `allOf` each other) would recurse on the same value until the stack
 * overflows at the first validation, so it is refused here. A cycle through `properties`, `items`
 * and the like is fine: each turn moves one level into the value, whose depth is bounded.
 */

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
/** Keywords a schema may not use: each registers or resolves a name outside the schema itself. */
const REFUSED_KEYWORDS = new Map([
  ['$anchor', 'anchors are not supported: refer to a place with "$ref": "#/$defs/<name>"'],
  ['$dynamicAnchor', 'dynamic anchors are not supported'],
  ['$dynamicRef', 'dynamic references are not supported: use "$ref": "#/..."'],
  ['$recursiveAnchor', 'recursive anchors are not supported'],
  ['$recursiveRef', 'recursive references are not supported: use "$ref": "#/..."'],
]);
/** Subschemas that apply to the same value (a `$ref` cycle through only these never ends). */
const IN_PLACE_ONE = ['not', 'if', 'then', 'else'];
const IN_PLACE_LIST = ['allOf', 'anyOf', 'oneOf'];
const IN_PLACE_MAP = ['dependentSchemas'];
/** Subschemas that apply to a part of the value (one level down). */
const CHILD_ONE = ['items', 'additionalItems', 'contains', 'additionalProperties', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];
const CHILD_LIST = ['prefixItems', 'items'];
const CHILD_MAP = ['properties', 'patternProperties'];
/** Where a schema keeps subschemas only to be referred to. */
const DEFINITIONS = ['$defs', 'definitions'];

interface Node {
  schema: Json;
  pointer: string;
}

/** Why `schema` breaks a static rule, or null. */
export function schemaShapeProblem(root: Json, maxDepth: number): string | null {
  const depthProblem = jsonDepthAndKeys(root, maxDepth);
  if (depthProblem) return depthProblem;
  // Every subschema object, with the in-place edges between them (a `$ref`, allOf, not, ...).
  const ids = new Map<object, number>();
  const inPlace: number[][] = [];
  const pointers: string[] = [];
  const queue: Node[] = [{ schema: root, pointer: '' }];
  const refs: { from: number; ref: string; at: string }[] = [];
  const idOf = (schema: object, pointer: string): number => {
    let id = ids.get(schema);
    if (id === undefined) {
      id = inPlace.length;
      ids.set(schema, id);
      inPlace.push([]);
      pointers.push(pointer);
    }
    return id;
  };
  for (let head = 0; head < queue.length; head++) {
    const { schema, pointer } = queue[head]!;
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) continue;
    const self = idOf(schema, pointer);
    const at = pointer || '#';
    for (const [keyword, why] of REFUSED_KEYWORDS) if (keyword in schema) return `uses ${keyword} at ${at}: ${why}`;
    if ('$id' in schema && pointer !== '') return `has an $id at ${at}: only the root may have one (it is not used to resolve anything)`;
    if ('$ref' in schema) {
      const ref = schema.$ref;
      if (typeof ref !== 'string' || !(ref === '#' || ref.startsWith('#/'))) {
        return `has "$ref": ${JSON.stringify(ref)} at ${at}: a reference names a place in the same schema ("#" or "#/$defs/<name>"), never another schema`;
      }
      refs.push({ from: self, ref, at });
    }
    if (typeof schema.pattern === 'string') {
      const problem = re2Problem(schema.pattern);
      if (problem) return `has a pattern at ${at} that ${problem}`;
    }
    const sub = (value: Json | undefined, path: string, place: boolean) => {
      if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) {
        if (typeof value === 'boolean') queue.push({ schema: value, pointer: path });
        return;
      }
      const child = idOf(value, path);
      if (place) inPlace[self]!.push(child);
      queue.push({ schema: value, pointer: path });
    };
    for (const k of IN_PLACE_ONE) sub(schema[k], `${pointer}/${k}`, true);
    for (const k of IN_PLACE_LIST) {
      const list = schema[k];
      if (Array.isArray(list)) list.forEach((s, i) => sub(s, `${pointer}/${k}/${i}`, true));
    }
    for (const k of IN_PLACE_MAP) eachEntry(schema[k], (name, s) => sub(s, `${pointer}/${k}/${escape(name)}`, true));
    for (const k of CHILD_ONE) if (!Array.isArray(schema[k])) sub(schema[k], `${pointer}/${k}`, false);
    for (const k of CHILD_LIST) {
      const list = schema[k];
      if (Array.isArray(list)) list.forEach((s, i) => sub(s, `${pointer}/${k}/${i}`, false));
    }
    for (const k of CHILD_MAP) eachEntry(schema[k], (name, s) => sub(s, `${pointer}/${k}/${escape(name)}`, false));
    const patterns = schema.patternProperties;
    if (patterns !== null && typeof patterns === 'object' && !Array.isArray(patterns)) {
      for (const name of Object.keys(patterns)) {
        const problem = re2Problem(name);
        if (problem) return `has a patternProperties key at ${at} that ${problem}`;
      }
    }
    for (const k of DEFINITIONS) eachEntry(schema[k], (name, s) => sub(s, `${pointer}/${k}/${escape(name)}`, false));
  }
  for (const { from, ref, at } of refs) {
    const target = resolvePointer(root, ref);
    if (target === undefined) return `has "$ref": ${JSON.stringify(ref)} at ${at}, which names no place in the schema`;
    if (target !== null && typeof target === 'object' && !Array.isArray(target)) {
      const id = ids.get(target);
      if (id === undefined) return `has "$ref": ${JSON.stringify(ref)} at ${at}, which names something that is not a subschema`;
      inPlace[from]!.push(id);
    }
  }
  const cycle = inPlaceCycle(inPlace);
  if (cycle !== null) {
    return `has a "$ref" cycle that never moves into the value (through ${pointers[cycle] || '#'}): validating it would never end`;
  }
  return null;
}

/** Iterative depth and forbidden-key check over every JSON value of the schema. */
function jsonDepthAndKeys(root: Json, maxDepth: number): string | null {
  const stack: { value: Json; depth: number }[] = [{ value: root, depth: 1 }];
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > maxDepth) return `is nested deeper than ${maxDepth} levels (WAYMARK_MAX_SCHEMA_DEPTH)`;
    if (Array.isArray(value)) {
      for (const v of value) stack.push({ value: v, depth: depth + 1 });
      continue;
    }
    for (const key of Object.keys(value)) {
      if (FORBIDDEN_KEYS.has(key)) return `has the key "${key}", which is not allowed anywhere (it names a JavaScript object's internals)`;
      stack.push({ value: value[key]!, depth: depth + 1 });
    }
  }
  return null;
}

function eachEntry(value: Json | undefined, fn: (name: string, schema: Json) => void): void {
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [name, schema] of Object.entries(value)) fn(name, schema);
}

function escape(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

function resolvePointer(root: Json, ref: string): Json | undefined {
  if (ref === '#') return root;
  let current: Json | undefined = root;
  for (const raw of ref.slice(2).split('/')) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    } catch {
      return undefined;
    }
    if (current === null || typeof current !== 'object') return undefined;
    if (Array.isArray(current)) {
      if (!/^\d+$/.test(part)) return undefined;
      current = current[Number(part)];
    } else {
      if (!Object.hasOwn(current, part)) return undefined;
      current = current[part];
    }
  }
  return current;
}

/** A node on a cycle of in-place edges (iterative three-colour DFS), or null. */
function inPlaceCycle(edges: number[][]): number | null {
  const colour = new Uint8Array(edges.length); // 0 new, 1 on the path, 2 done
  for (let start = 0; start < edges.length; start++) {
    if (colour[start] !== 0) continue;
    const stack: { node: number; next: number }[] = [{ node: start, next: 0 }];
    colour[start] = 1;
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const out = edges[top.node]!;
      if (top.next >= out.length) {
        colour[top.node] = 2;
        stack.pop();
        continue;
      }
      const to = out[top.next++]!;
      if (colour[to] === 1) return to;
      if (colour[to] === 0) {
        colour[to] = 1;
        stack.push({ node: to, next: 0 });
      }
    }
  }
  return null;
}

/** Why RE2 cannot run `pattern` (a feature only backtracking engines have), or null. */
function re2Problem(pattern: string): string | null {
  try {
    RE2JS.compile(pattern);
    return null;
  } catch (error) {
    return `RE2 (a linear-time engine, no lookaround or backreferences) cannot run: ${(error as Error).message}`;
  }
}
