// author/: tells a zod 4 schema (from any copy of zod: the server's or the user's own) from anything else.
// Must not parse or convert schemas: defineWorkflow and defineTool do that with the server's zod.
import { z } from 'zod';

/**
 * Why `value` cannot be a workflow's or tool's `input`, or null when it is a zod 4 schema. zod 4's
 * `instanceof` checks traits, not the class, so a schema from the user's own zod 4 (another
 * version or another copy) passes; a zod 3 schema gets a message saying how to move on.
 */
export function zodSchemaProblem(value: unknown): string | null {
  if (value instanceof z.ZodType) return null;
  if (value !== null && typeof value === 'object' && '_def' in value && !('_zod' in value)) {
    return "input is a zod 3 schema, and waymark needs zod 4: install zod 4 beside your module (npm install zod@4), or with zod 3.25 import { z } from 'zod/v4'";
  }
  return 'input must be a zod schema';
}
