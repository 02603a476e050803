import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Json } from '../../src/journal/run.js';
import { pinSchema, validatePinned } from '../../src/engine/replay/payload-schema.js';

/*
 * validatePinned remembers the pinned schemas whose hash it checked (replay re-checks the same
 * schema once per resolution). The memo must never let an altered schema through under a hash
 * that was verified for the original.
 */
describe('validatePinned', () => {
  const pinned = pinSchema(z.object({ amount: z.number().max(100) }));

  it('checks values against the pinned schema, again and again', () => {
    expect(validatePinned(pinned, { amount: 5 })).toEqual([]);
    expect(validatePinned(pinned, { amount: 5 })).toEqual([]);
    expect(validatePinned(pinned, { amount: 500 })).toHaveLength(1);
  });

  it('refuses a schema altered after its hash was verified for the original', () => {
    expect(validatePinned(pinned, { amount: 500 })).toHaveLength(1);
    const schema = structuredClone(pinned.schema) as { properties: { amount: { maximum: number } } };
    schema.properties.amount.maximum = 1000;
    const altered = { schema: schema as unknown as Json, schemaHash: pinned.schemaHash };
    expect(validatePinned(altered, { amount: 500 })).toEqual([
      { field: '', description: 'the pinned schema does not match its hash; the suspension entry was altered' },
    ]);
    expect(validatePinned(altered, { amount: 500 })).toHaveLength(1);
  });
});
