// flow/: a stored flow version as a Workflow the engine executes like code (body: the interpreter).
// Must not read the store: flow-catalog.ts finds the version, this only builds its Workflow.
import { z } from 'zod';
import type { DefinitionLimits } from '../../journal/definition-limits.js';
import type { Json } from '../../journal/run.js';
import type { FlowRecord } from '../../store/store.js';
import { WORKFLOW_BRAND, type Workflow, type WorkflowContext } from '../author/workflow.js';
import { schemaHash } from '../replay/content-key.js';
import { validatePinned } from '../replay/payload-schema.js';
import { protoDurationMs, type FlowDefinition } from './flow-definition.js';
import { FlowInterpreter, type ChildResolver } from './flow-interpreter.js';

/** The state schema of a flow that declares none: any object. */
const ANY_STATE: Json = { type: 'object' };

/**
 * The Workflow of one flow version: name and version from the store, the digest of its content
 * (what runs pin), drift `strict` (a parked run never continues on another definition), the state
 * schema as its input schema (a run's input is its initial state; none means `{}`).
 */
export function flowWorkflow(record: FlowRecord, resolveChild: ChildResolver, limits?: DefinitionLimits): Workflow {
  const flow = record.definition as unknown as FlowDefinition;
  const stateSchema = flow.stateSchema ?? ANY_STATE;
  const pinned = { schema: stateSchema, schemaHash: schemaHash(stateSchema) };
  const input = z.unknown().superRefine((value, ctx) => {
    for (const v of validatePinned(pinned, (value ?? {}) as Json)) {
      ctx.addIssue({ code: 'custom', message: v.description, path: v.field ? v.field.split(/\.|\[(\d+)\]/).filter(Boolean) : [] });
    }
  });
  const interpreter = new FlowInterpreter(flow, resolveChild, limits);
  return Object.freeze({
    [WORKFLOW_BRAND]: true as const,
    name: record.name,
    version: String(record.version),
    description: flow.description ?? '',
    input,
    output: null,
    drift: 'strict' as const,
    timeoutMs: flow.timeout === undefined ? null : protoDurationMs(flow.timeout),
    inputSchema: stateSchema,
    digest: record.digest,
    body: (ctx: WorkflowContext, value: never) => interpreter.run(ctx, (value ?? {}) as Json),
  });
}
