import { create } from '@bufbuild/protobuf';
import { NullValue, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import { MAX_JSON_DEPTH } from '../../journal/limits.js';
import type { Json } from '../../journal/run.js';

/*
 * google.protobuf.Value <-> the journal's Json. Written out rather than through toJson/fromJson so
 * a bad value is refused as a field violation naming where it is (`input.items[2]`).
 */

/** A Value that is not JSON; `field` says where (`input.items[2]`). RequestCheck reports it as a violation. */
export class ValueNotJsonError extends Error {
  constructor(readonly field: string, readonly description: string) {
    super(`${field} ${description}`);
  }
}

/**
 * The Json of a request field; an absent field is `null`. Throws ValueNotJsonError for a Value
 * with no kind set, a non-finite number, a `__proto__` key, or nesting deeper than MAX_JSON_DEPTH.
 */
export function jsonFromValue(value: Value | undefined, field: string): Json {
  return value === undefined ? null : read(value, field, 0);
}

function read(value: Value, at: string, depth: number): Json {
  const kind = value.kind;
  switch (kind.case) {
    case 'nullValue':
      return null;
    case 'boolValue':
    case 'stringValue':
      return kind.value;
    case 'numberValue':
      if (!Number.isFinite(kind.value)) refuse(at, 'numbers must be finite (JSON has no NaN or Infinity)');
      return kind.value;
    case 'listValue':
      if (depth >= MAX_JSON_DEPTH) tooDeep(at);
      return kind.value.values.map((item, i) => read(item, `${at}[${i}]`, depth + 1));
    case 'structValue': {
      if (depth >= MAX_JSON_DEPTH) tooDeep(at);
      // protobuf-es decodes a Struct's fields (JSON and binary) into a plain object by assignment,
      // so a `__proto__` key becomes the object's prototype and would vanish from the stored value
      // (and its JSON encoder drops such a key on the way out too): refuse it, naming where.
      if (Object.getPrototypeOf(kind.value.fields) !== Object.prototype) {
        refuse(`${at}.__proto__`, 'is a key protobuf\'s JavaScript runtime cannot carry (it would vanish); rename it');
      }
      const out: Record<string, Json> = {};
      for (const [key, item] of Object.entries(kind.value.fields)) {
        Object.defineProperty(out, key, { value: read(item, `${at}.${key}`, depth + 1), enumerable: true, writable: true, configurable: true });
      }
      return out;
    }
    case undefined:
      return refuse(at, 'is a google.protobuf.Value with no kind set; send null_value for JSON null');
  }
}

function tooDeep(at: string): never {
  return refuse(at, `is nested deeper than ${MAX_JSON_DEPTH} levels (the limit every client can decode); flatten it`);
}

function refuse(field: string, description: string): never {
  throw new ValueNotJsonError(field, description);
}

/** The Value of a journal Json (always well formed: it came through jsonFromValue or the engine). */
export function valueFromJson(json: Json): Value {
  if (json === null) return create(ValueSchema, { kind: { case: 'nullValue', value: NullValue.NULL_VALUE } });
  switch (typeof json) {
    case 'boolean':
      return create(ValueSchema, { kind: { case: 'boolValue', value: json } });
    case 'number':
      return create(ValueSchema, { kind: { case: 'numberValue', value: json } });
    case 'string':
      return create(ValueSchema, { kind: { case: 'stringValue', value: json } });
    default:
      if (Array.isArray(json)) return create(ValueSchema, { kind: { case: 'listValue', value: { values: json.map(valueFromJson) } } });
      return create(ValueSchema, {
        kind: { case: 'structValue', value: { fields: Object.fromEntries(Object.entries(json).map(([k, v]) => [k, valueFromJson(v)])) } },
      });
  }
}

/** A Value field for an optional Json: unset when absent. */
export function optionalValue(json: Json | null | undefined): Value | undefined {
  return json === null || json === undefined ? undefined : valueFromJson(json);
}
