// flow/: the shape of a declarative flow (the Flow message's JSON form) and its content digest.
// Pure: no store, no clock, no I/O; validation is flow-validation.ts, running it flow-interpreter.ts.
import type { Json } from '../../journal/run.js';
import { canonicalJson, sha256Hex } from '../replay/content-key.js';

/*
 * A flow travels as the proto message waymark.v1.Flow; the server hands the engine its canonical
 * JSON form (protobuf JSON mapping: lowerCamelCase names, durations as "90s", enums by name, default
 * values omitted), and the store keeps that JSON. Every client language produces the same JSON for
 * the same flow, so the digest of its canonical text identifies the content wherever it came from.
 */

export interface FlowRetryDef {
  maxAttempts?: number;
  initialInterval?: string;
  backoffCoefficient?: number;
  maxInterval?: string;
  nonRetryable?: string[];
}

export interface AgentNodeDef {
  instructions?: string;
  prompt?: string;
  model?: string;
  tools?: string[];
  outputSchema?: Json;
  into?: string;
  maxSteps?: number;
}

export interface ToolNodeDef {
  tool?: string;
  arguments?: Json;
  into?: string;
}

export type ApprovalTimeoutDecision = 'APPROVAL_TIMEOUT_DECISION_UNSPECIFIED' | 'APPROVAL_TIMEOUT_DECISION_APPROVE' | 'APPROVAL_TIMEOUT_DECISION_DENY';

export interface ApprovalNodeDef {
  title?: string;
  description?: string;
  deadline?: string;
  onTimeout?: ApprovalTimeoutDecision;
  into?: string;
}

export interface SignalNodeDef {
  name?: string;
  payloadSchema?: Json;
  deadline?: string;
  into?: string;
}

export interface ParallelNodeDef {
  join?: string;
}

export interface ChildNodeDef {
  workflow?: string;
  input?: Json;
  into?: string;
}

export interface EndNodeDef {
  output?: Json;
  /** The successor's input (templated): the run continues as new instead of ending (docs/flows.md "Node kinds"). */
  continueAsNew?: Json;
}

/** The kinds of a node, in the order of the proto's oneof. */
export const NODE_KINDS = ['agent', 'tool', 'approval', 'signal', 'branch', 'parallel', 'child', 'end'] as const;
export type NodeKind = (typeof NODE_KINDS)[number];

export interface FlowNodeDef {
  id: string;
  agent?: AgentNodeDef;
  tool?: ToolNodeDef;
  approval?: ApprovalNodeDef;
  signal?: SignalNodeDef;
  branch?: Record<string, never>;
  parallel?: ParallelNodeDef;
  child?: ChildNodeDef;
  end?: EndNodeDef;
  retry?: FlowRetryDef;
  timeout?: string;
  maxVisits?: number;
}

export interface FlowEdgeDef {
  from?: string;
  to?: string;
  condition?: string;
}

export interface FlowDefinition {
  name: string;
  description?: string;
  stateSchema?: Json;
  start?: string;
  nodes?: FlowNodeDef[];
  edges?: FlowEdgeDef[];
  timeout?: string;
}

/** The kind of a node: the one oneof member set (validation guarantees exactly one). */
export function nodeKind(node: FlowNodeDef): NodeKind | null {
  const set = NODE_KINDS.filter((k) => node[k] !== undefined);
  return set.length === 1 ? set[0]! : null;
}

/** sha256 of the flow's canonical JSON: what its runs pin as their workflow digest. */
export function flowDigest(definition: FlowDefinition): string {
  return sha256Hex(canonicalJson(definition as unknown as Json));
}

/** A protobuf JSON duration ("90s", "1.5s", "0.000001s") in milliseconds; null when it is not one. */
export function protoDurationMs(text: string): number | null {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?s$/.exec(text);
  if (!match) return null;
  const ms = Number(match[2]) * 1000 + Number(`0.${match[3] ?? '0'}`) * 1000;
  return match[1] ? -ms : ms;
}

/** The state properties a flow declares (its state schema's `properties`). */
export function declaredState(definition: FlowDefinition): Set<string> {
  const schema = definition.stateSchema;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return new Set();
  const properties = schema.properties;
  if (properties === null || typeof properties !== 'object' || Array.isArray(properties)) return new Set();
  return new Set(Object.keys(properties));
}
