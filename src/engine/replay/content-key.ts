// replay/: content keys and idempotency keys (hashes of canonical JSON): the identity of an effect call.
// Pure: no store, clock or I/O; a change here changes the identity of every journaled call.
import { createHash } from 'node:crypto';
import type { Json } from '../../journal/run.js';
import { NotJsonError } from '../errors.js';

/*
 * The identity of an effect call. A content key is the hash of what the call asks for, so a code
 * edit that keeps a call's kind, name and arguments keeps its key, and replay matches it wherever
 * it moved to (DESIGN "Identity: content keys with scoped forward matching").
 */

/** Hex characters kept from a sha256: 128 bits, plenty against accidental collisions. */
const KEY_HEX = 32;

/**
 * Turns a value into the JSON the journal stores, with JSON.stringify's rules (toJSON is called,
 * `undefined` object members and functions are dropped, `undefined` becomes null). Anything JSON
 * cannot carry (a bigint, a cycle) throws NotJsonError naming `what`.
 */
export function toJson(value: unknown, what: string): Json {
  if (value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new NotJsonError(what, err instanceof Error ? err.message : String(err));
  }
  return text === undefined ? null : (JSON.parse(text) as Json);
}

/** JSON text with object keys sorted (UTF-16 code unit order) and no whitespace: one text per value. */
export function canonicalJson(value: unknown): string {
  return write(toJson(value, 'value'));
}

function write(value: Json): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(write).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${write(value[k]!)}`).join(',')}}`;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** Recent content keys by their canonical text: most calls repeat (a step's name across runs). */
const recentKeys = new Map<string, string>();
const RECENT_KEYS_MAX = 4096;
const CACHED_TEXT_MAX = 512;

/** The content key of an effect call: hash of `{kind, name, args}` in canonical JSON. */
export function contentKey(call: { kind: string; name: string; args: unknown }): string {
  const args = call.args ?? null;
  // Keys sorted: args, kind, name. A primitive args is written as canonicalJson would write it
  // (test/replay/content-key.test.ts checks the two agree); anything else takes the general path.
  const text = args === null || typeof args === 'string' || typeof args === 'number' || typeof args === 'boolean'
    ? `{"args":${JSON.stringify(args)},"kind":${JSON.stringify(call.kind)},"name":${JSON.stringify(call.name)}}`
    : canonicalJson({ kind: call.kind, name: call.name, args });
  const cached = recentKeys.get(text);
  if (cached !== undefined) return cached;
  const key = sha256Hex(text).slice(0, KEY_HEX);
  if (text.length <= CACHED_TEXT_MAX) {
    if (recentKeys.size >= RECENT_KEYS_MAX) recentKeys.clear();
    recentKeys.set(text, key);
  }
  return key;
}

/**
 * The idempotency key handed to a tool (and to step functions): derived from the run, the scope,
 * the content key and the occurrence only. It never includes the lease epoch or an attempt number,
 * so a redispatch after a crash presents the same key and the downstream can deduplicate
 * (research/reliability.md §1.1). Shape: `<run id>:<32 hex>`, under 80 ASCII characters. The
 * hashed text is the canonical JSON of `[runId, scope, contentKey, occurrence]`, which for an
 * array of strings and an integer is what JSON.stringify writes.
 */
export function idempotencyKey(call: { runId: string; scope: string; contentKey: string; occurrence: number }): string {
  const digest = sha256Hex(JSON.stringify([call.runId, call.scope, call.contentKey, call.occurrence])).slice(0, KEY_HEX);
  return `${call.runId}:${digest}`;
}

/** Hash of a JSON Schema, pinned next to it in a suspension so tampering or drift is detectable. */
export function schemaHash(schema: Json): string {
  return sha256Hex(canonicalJson(schema)).slice(0, KEY_HEX);
}
