// replay/: pins a payload schema (zod to JSON Schema, hashed) and validates payloads against the pinned copy.
// Pure: no store or clock; a parked run is judged by its pinned schema, never by the current code's.
import type { ErrorObject } from 'ajv/dist/2020.js';
import { z } from 'zod';
import type { Json } from '../../journal/run.js';
import { schemaHash } from './content-key.js';
import type { FieldViolation } from '../errors.js';
import { schemaCompiler, SchemaRefusedError } from './schema-compiler.js';

/*
 * Schemas of payloads that arrive from outside a run (signals, approval decisions). The zod schema
 * a workflow declares is turned into JSON Schema and pinned, with its hash, in the suspension entry
 * when the run parks; a resolution is validated against that pinned copy with ajv, so a deploy that
 * changes the code never changes what an already-parked run accepts.
 */

export interface PinnedSchema {
  schema: Json;
  schemaHash: string;
}

/** JSON Schema of what a sender must send (zod's input side: fields with defaults are optional). */
export function pinSchema(schema: z.ZodType): PinnedSchema {
  const json = JSON.parse(JSON.stringify(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }))) as Json;
  return { schema: json, schemaHash: schemaHash(json) };
}

/** Any JSON value. */
export const ANY_JSON_SCHEMA: PinnedSchema = (() => {
  const schema: Json = { $schema: 'https://json-schema.org/draft/2020-12/schema' };
  return { schema, schemaHash: schemaHash(schema) };
})();

/**
 * Checks `value` against a pinned schema. Also refuses what JSON Schema cannot see but a consumer
 * may trip over: `__proto__`/`constructor`/`prototype` keys and non-finite numbers. Returns the
 * violations, empty when valid.
 */
export function validatePinned(pinned: PinnedSchema, value: Json): FieldViolation[] {
  const hazards = jsonHazards(value, '');
  if (hazards.length > 0) return hazards;
  if (!pinnedHashMatches(pinned)) {
    return [{ field: '', description: 'the pinned schema does not match its hash; the suspension entry was altered' }];
  }
  // Compiled by schema-compiler.ts (bounded cost, bounded cache, no $id shared between schemas).
  let validate;
  try {
    validate = schemaCompiler.validator(pinned.schema, pinned.schemaHash);
  } catch (error) {
    if (!(error instanceof SchemaRefusedError)) throw error;
    return [{ field: '', description: `the schema cannot be used: it ${error.message}` }];
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map(ajvViolation);
}

/**
 * Pinned schemas whose hash was checked, by their exact text and claimed hash. Replay checks every
 * resolution of a run against its suspension's pinned schema, and a run that waited hundreds of times
 * re-hashed (canonical JSON, sha256) the same schema hundreds of times per resume; JSON.stringify is
 * native and cheap. Only a verified pair is remembered: the same text with the same claimed hash is
 * the same schema, so a hit never accepts what the full check would refuse.
 */
const verifiedPins = new Set<string>();
const VERIFIED_PINS_MAX = 1024;

function pinnedHashMatches(pinned: PinnedSchema): boolean {
  const key = `${pinned.schemaHash}\u0000${JSON.stringify(pinned.schema)}`;
  if (verifiedPins.has(key)) return true;
  if (schemaHash(pinned.schema) !== pinned.schemaHash) return false;
  if (verifiedPins.size >= VERIFIED_PINS_MAX) verifiedPins.clear();
  verifiedPins.add(key);
  return true;
}

function ajvViolation(error: ErrorObject): FieldViolation {
  const field = pointerToPath(error.instancePath);
  const extra = (error.params as { additionalProperty?: string }).additionalProperty;
  return { field, description: extra ? `${error.message}: "${extra}"` : (error.message ?? error.keyword) };
}

/** `/items/2/sku` -> `items[2].sku` */
function pointerToPath(pointer: string): string {
  if (!pointer) return '';
  return pathToField(pointer.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')).map((p) => (/^\d+$/.test(p) ? Number(p) : p)));
}

export function pathToField(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out;
}

/** zod issues as field violations. */
export function zodViolations(error: z.ZodError): FieldViolation[] {
  return error.issues.map((i) => ({ field: pathToField(i.path), description: i.message }));
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function jsonHazards(value: Json, at: string): FieldViolation[] {
  if (typeof value === 'number' && !Number.isFinite(value)) return [{ field: at, description: 'numbers must be finite' }];
  if (value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) return value.flatMap((v, i) => jsonHazards(v, `${at}[${i}]`));
  const out: FieldViolation[] = [];
  for (const key of Object.keys(value)) {
    const field = at ? `${at}.${key}` : key;
    if (FORBIDDEN_KEYS.has(key)) out.push({ field, description: `the key "${key}" is not allowed` });
    else out.push(...jsonHazards(value[key]!, field));
  }
  return out;
}
