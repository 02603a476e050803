import { create, ScalarType, type DescEnum, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { NullValue, ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import fc from 'fast-check';

/*
 * fast-check arbitraries over the generated message types, for the fuzz suite: any message of a
 * descriptor, with hostile field values (strings with NUL and lone surrogates, huge and negative
 * numbers, unknown enum numbers, deep google.protobuf.Values), and with `hints` a field can take
 * plausible values too (ids of real runs, registered workflow names) so requests get past the
 * first check often enough to reach the engine and the store.
 */

/** Any UTF-16 code unit, lone surrogates and NUL included. */
const codeUnit = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('a', 'b', '-', '.', '_', '/', ':', ' ', '😀', 'é') },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udfff', '\u007f', '\n', '"', '\\') },
);

export const hostileString = fc.oneof(
  { weight: 5, arbitrary: fc.string({ unit: codeUnit, maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: codeUnit, minLength: 250, maxLength: 300 }) },
  { weight: 1, arbitrary: fc.constantFrom('', '__proto__', 'constructor', 'x'.repeat(5000)) },
);

/** A google.protobuf.Value: JSON, nested up to `maxDepth` levels (past the server's 32 and the decoders' 49), or with no kind. */
export function valueArbitrary(maxDepth = 60): fc.Arbitrary<Value> {
  const leaf: fc.Arbitrary<Value['kind']> = fc.oneof(
    fc.constant({ case: 'nullValue' as const, value: NullValue.NULL_VALUE }),
    fc.boolean().map((value) => ({ case: 'boolValue' as const, value })),
    fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Infinity, -0, 1e308)).map((value) => ({ case: 'numberValue' as const, value })),
    hostileString.map((value) => ({ case: 'stringValue' as const, value })),
    fc.constant({ case: undefined, value: undefined }),
  );
  const nested = fc.integer({ min: 0, max: maxDepth }).chain((depth) => leaf.map((kind) => {
    let v = create(ValueSchema, { kind });
    for (let i = 0; i < depth; i++) {
      v = i % 2 === 0
        ? create(ValueSchema, { kind: { case: 'listValue', value: { values: [v] } } })
        : create(ValueSchema, { kind: { case: 'structValue', value: { fields: { k: v } } } });
    }
    return v;
  }));
  const wide = fc.dictionary(hostileString, leaf.map((kind) => create(ValueSchema, { kind })), { maxKeys: 5 })
    .map((fields) => create(ValueSchema, { kind: { case: 'structValue', value: { fields } } }));
  return fc.oneof({ weight: 3, arbitrary: nested }, { weight: 1, arbitrary: wide });
}

function enumArbitrary(desc: DescEnum): fc.Arbitrary<number> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...desc.values.map((v) => v.number)) },
    { weight: 1, arbitrary: fc.integer({ min: -3, max: 1000 }) },
  );
}

function scalarArbitrary(type: ScalarType): fc.Arbitrary<unknown> {
  switch (type) {
    case ScalarType.STRING:
      return hostileString;
    case ScalarType.BOOL:
      return fc.boolean();
    case ScalarType.BYTES:
      return fc.uint8Array({ maxLength: 16 });
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return fc.oneof(fc.double(), fc.constantFrom(Number.NaN, Infinity, -Infinity, -1));
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(-1n, 0n, 1n, 2n, 2n ** 31n));
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    default:
      return fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), fc.constantFrom(-1, 0, 1, 10, 1000, 1001));
  }
}

/** Plausible values for fields by their proto name, tried next to the hostile ones. */
export type Hints = Partial<Record<string, fc.Arbitrary<unknown>>>;

function fieldArbitrary(field: DescField, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  const hinted = hints[field.name];
  const plain = ((): fc.Arbitrary<unknown> => {
    switch (field.fieldKind) {
      case 'scalar':
        return scalarArbitrary(field.scalar);
      case 'enum':
        return enumArbitrary(field.enum);
      case 'message':
        return messageValue(field.message, hints, depth + 1);
      case 'list': {
        const item = field.listKind === 'scalar' ? scalarArbitrary(field.scalar) : field.listKind === 'enum' ? enumArbitrary(field.enum) : messageValue(field.message, hints, depth + 1);
        return fc.array(item, { maxLength: 4 });
      }
      case 'map': {
        const value = field.mapKind === 'scalar' ? scalarArbitrary(field.scalar) : field.mapKind === 'enum' ? enumArbitrary(field.enum) : messageValue(field.message, hints, depth + 1);
        return fc.dictionary(hostileString, value, { maxKeys: 4 });
      }
    }
  })();
  return hinted ? fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: plain }) : plain;
}

function messageValue(desc: DescMessage, hints: Hints, depth: number): fc.Arbitrary<unknown> {
  if (desc.typeName === ValueSchema.typeName) return valueArbitrary();
  if (depth > 3) return fc.constant(create(desc));
  return messageArbitrary(desc, hints, depth);
}

/** Any message of `desc`: each field unset or set to an arbitrary (or hinted) value. */
export function messageArbitrary<D extends DescMessage>(desc: D, hints: Hints = {}, depth = 0): fc.Arbitrary<MessageShape<D>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of desc.fields) fields[field.localName] = fieldArbitrary(field, hints, depth);
  return fc.record(fields, { requiredKeys: [] }).map((init) => create(desc, init as never));
}
