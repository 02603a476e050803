/**
 * Limits on what a tenant defines (flows, their conditions and templates, JSON Schemas, worker tool
 * declarations), each a setting (docs/configuration.md "Limits on definitions"). They bound what
 * one request can make a replica compute or keep: every check that enforces them is linear in what
 * it reads, and runs before anything costlier (a schema compile, a CEL plan, a graph walk).
 */
export interface DefinitionLimits {
  /** Nodes of one flow. */
  flowNodes: number;
  /** Edges of one flow. */
  flowEdges: number;
  /** Edges leaving one node (a parallel node's branches, a branch node's conditions). */
  flowFanOut: number;
  /** A RegisterFlow request as sent, and the flow's JSON text, in bytes (decoding costs about a microsecond a byte). */
  flowBytes: number;
  /** One CEL condition, in characters (its parser takes tens of microseconds per character). */
  conditionChars: number;
  /** All CEL conditions of one flow together, in characters. */
  flowConditionChars: number;
  /** Estimated evaluation steps of one CEL condition (registration: its literals; evaluation: the state's sizes too). */
  conditionCost: number;
  /** One templated string (a prompt, a title, an argument), in characters. */
  templateChars: number;
  /** One JSON Schema, in bytes of its JSON text. */
  schemaBytes: number;
  /** Nesting of one JSON Schema's JSON. */
  schemaDepth: number;
  /** Tools one RegisterWorker declares. */
  workerTools: number;
  /** Distinct remote tool names live workers of one namespace declare. */
  namespaceTools: number;
}

export const DEFAULT_DEFINITION_LIMITS: DefinitionLimits = {
  flowNodes: 500,
  flowEdges: 2_000,
  flowFanOut: 64,
  flowBytes: 256 * 1024,
  conditionChars: 512,
  flowConditionChars: 16_384,
  conditionCost: 50_000,
  templateChars: 16_384,
  schemaBytes: 64 * 1024,
  schemaDepth: 32,
  workerTools: 100,
  namespaceTools: 1_000,
};
