// replay/: compiles the JSON Schemas tenants send (flow state and node schemas, worker tool schemas, pinned payload schemas) at a bounded cost.
// Must not touch a store, the clock or any I/O: pure but for a bounded in-memory cache; a schema is refused before anything is compiled when it could cost more than its size.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { RE2JS } from 're2js';
import type { Json } from '../../journal/run.js';
import { schemaHash } from './content-key.js';
import { schemaShapeProblem } from './schema-shape.js';

/*
 * One server validates the schemas of every namespace, so a schema must not be able to reach
 * another one or cost more than its size (docs/security.md "Tenant definitions"):
 * - nothing is registered by `$id`: a root `$id` is ignored (the copy compiled has none), any other
 *   `$id`, anchors and dynamic references are refused, and a `$ref` names a place inside the same
 *   schema (`#/...`). So no `$id` or `$ref` crosses a schema, let alone a namespace, and the same
 *   schema registered twice compiles to the same thing (schema-shape.ts checks all of this);
 * - `pattern` and `patternProperties` run on RE2 (re2js: linear time, no backtracking), and
 *   `uniqueItems` compares canonical JSON texts in a set (linear, where ajv's pairwise check is
 *   quadratic);
 * - compiled validators are cached by content hash in a bounded LRU; ajv itself keeps every schema
 *   it compiled (its code scope), so the instance that compiles is replaced every few hundred
 *   compiles and the old one goes once the validators it made have left the cache.
 */

/** What a tenant's schema may be (DefinitionLimits.schemaBytes, schemaDepth), checked where it is declared. */
export interface SchemaSize {
  /** Largest schema, in bytes of its JSON text. */
  bytes: number;
  /** Deepest nesting of a schema's JSON. */
  depth: number;
}

export interface SchemaCacheLimits {
  /** Compiled validators kept (LRU). */
  cacheEntries: number;
  /** Schema bytes the kept validators may stand for (their code is a few times that). */
  cacheBytes: number;
}

export const DEFAULT_SCHEMA_CACHE: SchemaCacheLimits = {
  cacheEntries: 512,
  cacheBytes: 8 * 1024 * 1024,
};

/** Nesting of a pinned schema (one from code may nest more than a tenant's may). */
const PINNED_MAX_DEPTH = 256;
/** How many schemas one ajv instance compiles before a fresh one takes over (see above). */
const COMPILES_PER_INSTANCE = 128;
const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

/** A schema that cannot be used; the message is one sentence naming the problem. */
export class SchemaRefusedError extends Error {}

/** A pattern on RE2: ajv calls it as it would `new RegExp(pattern, "u")` and keys its scope on toString(). */
function re2Pattern(pattern: string): { test(text: string): boolean; toString(): string } {
  const re = RE2JS.compile(pattern);
  return { test: (text) => re.test(text), toString: () => `re2:${pattern}` };
}
re2Pattern.code = 're2Pattern';

function uniqueItems(schema: boolean, data: unknown): boolean {
  if (!schema || !Array.isArray(data)) return true;
  const seen = new Set<unknown>();
  for (const item of data) {
    // Primitives are their own key (1 and 1.0 are one number in JSON and in JS); objects and arrays
    // their canonical text (key order does not count), as JSON Schema's equality says.
    const key = item !== null && typeof item === 'object' ? `j${canonicalText(item as Json)}` : item;
    if (seen.has(key)) return false;
    seen.add(key);
  }
  return true;
}

/** canonicalJson without its checks: `data` is a value ajv validates, already JSON. */
function canonicalText(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalText).join(',')}]`;
  return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonicalText(value[k]!)}`).join(',')}}`;
}

function newAjv(): Ajv2020 {
  // No allErrors (unbounded error lists), no $data (patterns from the data), strict off because
  // zod emits keywords like `default`; schemas are checked against the meta-schema by `meta` below.
  const ajv = new Ajv2020({
    allErrors: false, strict: false, validateFormats: false, validateSchema: false,
    code: { regExp: re2Pattern as never },
  });
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword({ keyword: 'uniqueItems', type: 'array', schemaType: 'boolean', errors: false, validate: uniqueItems });
  return ajv;
}

/** Checks schemas against the draft 2020-12 meta-schema; it compiles nothing a tenant sent. */
const meta = new Ajv2020({ strict: false, validateFormats: false });

interface Cached {
  validate: ValidateFunction;
  bytes: number;
}

export class SchemaCompiler {
  private readonly cache = new Map<string, Cached>();
  private cachedBytes = 0;
  private ajv = newAjv();
  private compiles = 0;

  constructor(readonly limits: SchemaCacheLimits = DEFAULT_SCHEMA_CACHE) {}

  /** Why a schema a tenant declares cannot be used, or null (it is then compiled and cached). */
  problem(schema: Json, size: SchemaSize): string | null {
    const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '', 'utf8');
    if (bytes > size.bytes) return `is ${bytes} bytes of JSON; a schema may have at most ${size.bytes} (WAYMARK_MAX_SCHEMA_BYTES)`;
    try {
      this.validator(schema, undefined, size.depth);
      return null;
    } catch (error) {
      if (error instanceof SchemaRefusedError) return error.message;
      throw error;
    }
  }

  /**
   * The validator of `schema` (cached by content); SchemaRefusedError when it cannot be used. A
   * pinned schema was sized where it was declared (or comes from the deployment's code), so only
   * the rules that keep validation finite and schemas apart are applied here.
   */
  validator(schema: Json, hash?: string, maxDepth = PINNED_MAX_DEPTH): ValidateFunction {
    const key = hash ?? schemaHash(schema);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit.validate;
    }
    const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '', 'utf8');
    const shape = schemaShapeProblem(schema, maxDepth);
    if (shape) throw new SchemaRefusedError(shape);
    const validate = this.compile(schema);
    this.remember(key, { validate, bytes });
    return validate;
  }

  /** Drops every cached validator (tests measure memory with it). */
  clear(): void {
    this.cache.clear();
    this.cachedBytes = 0;
    this.ajv = newAjv();
    this.compiles = 0;
  }

  get size(): number {
    return this.cache.size;
  }

  private compile(schema: Json): ValidateFunction {
    if (typeof schema === 'boolean') return this.ajv.compile(schema);
    const { $id: _id, $schema, ...rest } = schema as Record<string, Json>;
    if ($schema !== undefined && $schema !== DRAFT_2020) {
      throw new SchemaRefusedError(`names $schema ${JSON.stringify($schema)}: schemas are JSON Schema draft 2020-12 (drop "$schema" or name ${DRAFT_2020})`);
    }
    let valid: boolean;
    try {
      valid = meta.validateSchema(rest) as boolean;
    } catch (error) {
      throw new SchemaRefusedError(`is not a valid JSON Schema: ${(error as Error).message}`);
    }
    if (!valid) throw new SchemaRefusedError(`is not a valid JSON Schema: ${meta.errorsText(meta.errors, { dataVar: 'schema' })}`);
    if (++this.compiles > COMPILES_PER_INSTANCE) {
      this.ajv = newAjv();
      this.compiles = 1;
    }
    try {
      return this.ajv.compile(rest);
    } catch (error) {
      throw new SchemaRefusedError(`is not a valid JSON Schema: ${(error as Error).message}`);
    }
  }

  private remember(key: string, entry: Cached): void {
    this.cache.set(key, entry);
    this.cachedBytes += entry.bytes;
    for (const [oldest, old] of this.cache) {
      if (this.cache.size <= this.limits.cacheEntries && this.cachedBytes <= this.limits.cacheBytes) break;
      if (oldest === key) break;
      this.cache.delete(oldest);
      this.cachedBytes -= old.bytes;
    }
  }
}

/** The compiler every schema of this process goes through. */
export const schemaCompiler = new SchemaCompiler();
