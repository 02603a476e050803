import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, contentKey, idempotencyKey, sha256Hex, toJson } from '../../src/engine/replay/content-key.js';
import { NotJsonError } from '../../src/engine/errors.js';
import { durationMs } from '../../src/engine/author/duration.js';

describe('canonical JSON and content keys', () => {
  it('sorts keys at every depth and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: undefined, x: 0 }], c: null } })).toBe('{"a":{"c":null,"d":[2,{"x":0,"z":1}]},"b":1}');
  });

  it('is independent of key order (property)', () => {
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (obj) => {
      const reversed = Object.fromEntries(Object.entries(obj).reverse());
      expect(canonicalJson(reversed)).toBe(canonicalJson(obj));
      expect(contentKey({ kind: 'tool', name: 't', args: reversed })).toBe(contentKey({ kind: 'tool', name: 't', args: obj }));
    }));
  });

  it('changes with kind, name or args', () => {
    const base = contentKey({ kind: 'tool', name: 'charge', args: { amount: 5 } });
    expect(base).toMatch(/^[0-9a-f]{32}$/);
    expect(contentKey({ kind: 'step', name: 'charge', args: { amount: 5 } })).not.toBe(base);
    expect(contentKey({ kind: 'tool', name: 'refund', args: { amount: 5 } })).not.toBe(base);
    expect(contentKey({ kind: 'tool', name: 'charge', args: { amount: 6 } })).not.toBe(base);
  });

  it('is the hash of the canonical JSON of {kind, name, args}, whatever the args and however often asked (property)', () => {
    // contentKey writes primitive args directly and remembers recent keys; both must agree with the definition.
    const reference = (kind: string, name: string, args: unknown) => sha256Hex(canonicalJson({ kind, name, args: args ?? null })).slice(0, 32);
    const args = fc.oneof(fc.constant(undefined), fc.constant(null), fc.string(), fc.double(), fc.integer(), fc.boolean(), fc.jsonValue());
    fc.assert(fc.property(fc.constantFrom('step', 'tool', 'model'), fc.string(), args, (kind, name, a) => {
      expect(contentKey({ kind, name, args: a })).toBe(reference(kind, name, a));
      expect(contentKey({ kind, name, args: a })).toBe(reference(kind, name, a));
    }), { numRuns: 500 });
  });

  it('refuses what JSON cannot carry', () => {
    expect(() => toJson({ n: 1n }, 'args')).toThrow(NotJsonError);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => toJson(cyclic, 'args')).toThrow(NotJsonError);
  });
});

describe('idempotency keys', () => {
  const call = { runId: '0190a0c0-0000-7000-8000-000000000001', scope: 'par:0:1', contentKey: 'ab'.repeat(16), occurrence: 2 };

  it('derive from run, scope, content key and occurrence only: the same call gets the same key', () => {
    expect(idempotencyKey(call)).toBe(idempotencyKey({ ...call }));
    expect(idempotencyKey(call)).toMatch(/^0190a0c0-0000-7000-8000-000000000001:[0-9a-f]{32}$/);
    for (const change of [{ runId: call.runId.replace('1', '2') }, { scope: '' }, { contentKey: 'cd'.repeat(16) }, { occurrence: 3 }]) {
      expect(idempotencyKey({ ...call, ...change })).not.toBe(idempotencyKey(call));
    }
    expect(idempotencyKey(call)).toBe(`${call.runId}:${sha256Hex(canonicalJson([call.runId, call.scope, call.contentKey, call.occurrence])).slice(0, 32)}`);
    // The signature has no epoch or attempt: there is nothing else it could vary with.
    expect(Object.keys(call).sort()).toEqual(['contentKey', 'occurrence', 'runId', 'scope']);
  });
});

describe('durations', () => {
  it.each([[0, 0], [1500, 1500], ['500ms', 500], ['30s', 30_000], ['15m', 900_000], ['24h', 86_400_000], ['7d', 604_800_000], ['1h30m', 5_400_000], ['1.5s', 1500]])('%s = %d ms', (d, ms) => {
    expect(durationMs(d)).toBe(ms);
  });
  it.each(['', 'soon', '10', '5 m', '-1s'])('refuses %j', (d) => {
    expect(() => durationMs(d)).toThrow(RangeError);
  });
});
