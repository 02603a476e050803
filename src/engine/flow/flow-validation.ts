// flow/: validates a flow before it is stored: every problem as a field violation with its exact path.
// Pure: what the server knows (tools, models, workflows) is passed in; nothing is read or written here.
import type { Json } from '../../journal/run.js';
import { DEFAULT_DEFINITION_LIMITS, type DefinitionLimits } from '../../journal/definition-limits.js';
import type { FieldViolation } from '../errors.js';
import { LoopShare } from '../replay/loop-share.js';
import { schemaCompiler } from '../replay/schema-compiler.js';
import { retryPolicy, TOOL_RETRY_DEFAULT, type RetryOptions } from '../author/retry.js';
import { compileCondition } from './flow-cel.js';
import {
  declaredState, nodeKind, NODE_KINDS, protoDurationMs, type FlowDefinition, type FlowNodeDef, type NodeKind,
} from './flow-definition.js';
import { templateReads, templateStrings } from './flow-template.js';
import { checkGraph } from './flow-graph.js';

/*
 * The registration rules (docs/flows.md "Validation"). Paths are the proto's snake_case field
 * names from the request's `flow` (`flow.nodes[2].tool.tool`, `flow.edges[3].condition`), as every
 * BadRequest of the API names its fields. All problems are reported at once.
 */

/** What the server knows, for the names a flow refers to. */
export interface FlowKnowledge {
  /** Whether a tool of this name is registered (or built in). */
  tool(name: string): boolean;
  /** For an MCP tool name (`server.tool`): null when it exists, else why not. Absent: MCP names are unknown tools. */
  mcpTool?: (name: string) => string | null;
  /** Null when the model name resolves; else why it does not. Absent: no agent runtime. */
  model?: (name: string) => string | null;
  /** Whether a workflow or flow of this name can be started from this flow's namespace. */
  workflow(name: string): boolean;
}

const FLOW_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;
const SIGNAL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

const SNAKE: Record<string, string> = {
  outputSchema: 'output_schema', payloadSchema: 'payload_schema', onTimeout: 'on_timeout', maxSteps: 'max_steps',
  maxAttempts: 'max_attempts', initialInterval: 'initial_interval', backoffCoefficient: 'backoff_coefficient',
  maxInterval: 'max_interval', nonRetryable: 'non_retryable',
};

export async function validateFlow(flow: FlowDefinition, knows: FlowKnowledge, limits: DefinitionLimits = DEFAULT_DEFINITION_LIMITS): Promise<FieldViolation[]> {
  const v: FieldViolation[] = [];
  const fail = (field: string, description: string) => v.push({ field: `flow${field ? `.${field}` : ''}`, description });
  // The sizes first, before any walk: a flow over them is refused at the cost of counting.
  const nodes = flow.nodes ?? [];
  const edgeList = flow.edges ?? [];
  if (nodes.length > limits.flowNodes) fail('nodes', `has ${nodes.length} nodes; a flow may have at most ${limits.flowNodes} (WAYMARK_MAX_FLOW_NODES)`);
  if (edgeList.length > limits.flowEdges) fail('edges', `has ${edgeList.length} edges; a flow may have at most ${limits.flowEdges} (WAYMARK_MAX_FLOW_EDGES)`);
  let conditionChars = 0;
  for (const edge of edgeList) conditionChars += typeof edge.condition === 'string' ? edge.condition.length : 0;
  if (conditionChars > limits.flowConditionChars) {
    fail('edges', `has ${conditionChars} characters of conditions; a flow may have at most ${limits.flowConditionChars} (WAYMARK_MAX_FLOW_CONDITION_CHARS)`);
  }
  if (v.length > 0) return v;
  // Compiling schemas and conditions is the costly part: the event loop is shared between them.
  const share = new LoopShare();

  if (typeof flow.name !== 'string' || !FLOW_NAME.test(flow.name)) {
    fail('name', 'a flow name is 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit');
  }
  // A broken state schema is one problem: names read from it are then not checked against it.
  const schemaOk = checkStateSchema(flow.stateSchema, fail, limits);
  const declared: ReadonlySet<string> = schemaOk ? declaredState(flow) : ANY_NAME;
  if (flow.timeout !== undefined) checkDuration(flow.timeout, 'timeout', fail);

  if (nodes.length === 0) fail('nodes', 'a flow needs at least one node (and an end node)');
  const index = new Map<string, number>();
  nodes.forEach((node, i) => {
    if (typeof node.id !== 'string' || !NODE_ID.test(node.id)) fail(`nodes[${i}].id`, 'a node id is 1-64 letters, digits, "_" or "-"');
    else if (index.has(node.id)) fail(`nodes[${i}].id`, `"${node.id}" is already the id of nodes[${index.get(node.id)}]`);
    else index.set(node.id, i);
  });
  const kinds = nodes.map((node, i) => {
    const kind = nodeKind(node);
    if (!kind) {
      const set = NODE_KINDS.filter((k) => node[k] !== undefined);
      fail(`nodes[${i}]`, set.length === 0 ? `sets no kind: set one of ${NODE_KINDS.join(', ')}` : `sets ${set.join(' and ')}: a node has exactly one kind`);
    }
    return kind;
  });
  const nodeRef = (id: string | undefined, field: string): boolean => {
    if (!id) {
      fail(field, 'names no node');
      return false;
    }
    if (!index.has(id)) {
      fail(field, `names node "${id}", which the flow does not have`);
      return false;
    }
    return true;
  };

  nodeRef(flow.start, 'start');

  for (const [i, node] of nodes.entries()) {
    const kind = kinds[i];
    if (kind) {
      checkNode(node, kind, `nodes[${i}]`, { declared, knows, fail, nodeRef, limits });
      await share.pause();
    }
    if (node.retry !== undefined) {
      if (kind !== 'tool' && kind !== 'agent') fail(`nodes[${i}].retry`, 'only tool and agent nodes retry');
      else checkRetry(node, `nodes[${i}].retry`, fail);
    }
    if (node.timeout !== undefined) {
      if (kind !== 'tool' && kind !== 'agent') fail(`nodes[${i}].timeout`, 'only tool and agent nodes have an attempt timeout (waits have a deadline)');
      else checkDuration(node.timeout, `nodes[${i}].timeout`, fail);
    }
    if (node.maxVisits !== undefined && !(Number.isInteger(node.maxVisits) && node.maxVisits >= 0)) fail(`nodes[${i}].max_visits`, 'must be a whole number >= 0');
  }

  // Edges: each names known nodes; conditions only out of a branch, each compiling over declared state.
  const out = new Map<string, number[]>();
  for (const [k, edge] of edgeList.entries()) {
    const fromOk = nodeRef(edge.from, `edges[${k}].from`);
    const toOk = nodeRef(edge.to, `edges[${k}].to`);
    if (!fromOk) continue;
    const fromKind = kinds[index.get(edge.from!)!];
    if (fromKind === 'end') fail(`edges[${k}].from`, `"${edge.from}" is an end node: an end has no outgoing edge`);
    if (edge.condition) {
      if (fromKind !== 'branch') fail(`edges[${k}].condition`, `only an edge leaving a branch node has a condition ("${edge.from}" is ${fromKind ?? 'not a valid node'})`);
      else {
        const compiled = compileCondition(edge.condition, declared, limits);
        if (typeof compiled === 'string') fail(`edges[${k}].condition`, `the CEL condition ${compiled}`);
        await share.pause();
      }
    }
    // Counted even when `to` is unknown, so one bad edge is one violation (not also a missing edge).
    const list = out.get(edge.from!);
    if (list) list.push(k);
    else out.set(edge.from!, [k]);
    void toOk;
  }
  nodes.forEach((node, i) => {
    const kind = kinds[i];
    if (!kind || !index.has(node.id) || index.get(node.id) !== i) return;
    const edges = out.get(node.id) ?? [];
    if (edges.length > limits.flowFanOut) {
      fail(`nodes[${i}]`, `"${node.id}" has ${edges.length} outgoing edges; a node may have at most ${limits.flowFanOut} (WAYMARK_MAX_FLOW_FAN_OUT)`);
      return;
    }
    if (kind === 'branch') {
      if (edges.length === 0) fail(`nodes[${i}]`, `branch "${node.id}" has no outgoing edge`);
      const unconditional = edges.filter((k) => !flow.edges![k]!.condition);
      if (unconditional.length > 1) fail(`edges[${unconditional[1]}].condition`, `branch "${node.id}" already has an edge without a condition (edges[${unconditional[0]}], its default)`);
    } else if (kind === 'parallel') {
      if (edges.length === 0) fail(`nodes[${i}]`, `parallel "${node.id}" has no outgoing edge (one per branch)`);
    } else if (kind !== 'end' && edges.length !== 1) {
      fail(`nodes[${i}]`, `${kind} node "${node.id}" needs exactly one outgoing edge, has ${edges.length}`);
    }
  });
  if (v.length > 0) return v; // the graph checks below assume well-formed nodes and edges

  checkGraph(flow, nodes, kinds as NodeKind[], index, out, fail);
  return v;
}

interface NodeCheck {
  limits: DefinitionLimits;
  declared: ReadonlySet<string>;
  knows: FlowKnowledge;
  fail: (field: string, description: string) => void;
  nodeRef: (id: string | undefined, field: string) => boolean;
}

function checkNode(node: FlowNodeDef, kind: NodeKind, at: string, c: NodeCheck): void {
  const { declared, knows, fail, limits } = c;
  const here = `${at}.${kind}`;
  const templates = (value: Json | undefined, field: string) => {
    for (const { field: f, text } of templateStrings(value, `${here}.${field}`)) {
      if (text.length > limits.templateChars) fail(f, `is ${text.length} characters; a templated string may have at most ${limits.templateChars} (WAYMARK_MAX_TEMPLATE_CHARS)`);
      else checkTemplate(text, f, declared, fail);
    }
  };
  const schema = (value: Json, field: string) => checkSchema(value, field, fail, limits);
  const into = (value: string | undefined) => {
    if (value && !declared.has(value)) fail(`${here}.into`, `writes state.${value}, which the state schema does not declare`);
  };
  switch (kind) {
    case 'agent': {
      const a = node.agent!;
      if (!knows.model) fail(here, 'the server has no agent runtime, so agent nodes cannot run');
      else if (!a.model) fail(`${here}.model`, 'names no model');
      else {
        const problem = knows.model(a.model);
        if (problem) fail(`${here}.model`, problem);
      }
      (a.tools ?? []).forEach((t, j) => {
        const problem = toolProblem(knows, t);
        if (problem) fail(`${here}.tools[${j}]`, problem);
      });
      if (!a.prompt) fail(`${here}.prompt`, 'an agent needs a prompt');
      templates(a.prompt, 'prompt');
      templates(a.instructions, 'instructions');
      if (a.outputSchema !== undefined) schema(a.outputSchema, `${here}.output_schema`);
      into(a.into);
      break;
    }
    case 'tool': {
      const t = node.tool!;
      if (!t.tool) fail(`${here}.tool`, 'names no tool');
      else {
        const problem = toolProblem(knows, t.tool);
        if (problem) fail(`${here}.tool`, problem);
      }
      templates(t.arguments, 'arguments');
      into(t.into);
      break;
    }
    case 'approval': {
      const a = node.approval!;
      if (!a.title) fail(`${here}.title`, 'an approval needs a title');
      templates(a.title, 'title');
      templates(a.description, 'description');
      if (a.deadline !== undefined) checkDuration(a.deadline, `${here}.deadline`, fail);
      into(a.into);
      break;
    }
    case 'signal': {
      const s = node.signal!;
      if (!s.name || !SIGNAL_NAME.test(s.name)) fail(`${here}.name`, 'a signal name is 1-128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit');
      if (s.payloadSchema !== undefined) schema(s.payloadSchema, `${here}.payload_schema`);
      if (s.deadline !== undefined) checkDuration(s.deadline, `${here}.deadline`, fail);
      into(s.into);
      break;
    }
    case 'parallel':
      c.nodeRef(node.parallel!.join, `${here}.join`);
      break;
    case 'child': {
      const ch = node.child!;
      if (!ch.workflow) fail(`${here}.workflow`, 'names no workflow');
      else if (!knows.workflow(ch.workflow)) fail(`${here}.workflow`, `names "${ch.workflow}", which is neither a registered workflow nor a flow of this namespace`);
      templates(ch.input, 'input');
      into(ch.into);
      break;
    }
    case 'end':
      templates(node.end!.output, 'output');
      templates(node.end!.continueAsNew, 'continue_as_new');
      if (node.end!.output !== undefined && node.end!.continueAsNew !== undefined) fail(`${here}.continue_as_new`, 'cannot be set with output: a run that continues as new ends with its successor\'s id');
      break;
    case 'branch':
      break;
  }
}

/** Null when `name` is a tool the server knows: registered, built in, remote, or an MCP tool (docs/mcp.md). */
function toolProblem(knows: FlowKnowledge, name: string): string | null {
  if (knows.tool(name)) return null;
  if (knows.mcpTool && name.includes('.')) return knows.mcpTool(name);
  return `names tool "${name}", which is not registered`;
}

function checkTemplate(text: string, field: string, declared: ReadonlySet<string>, fail: NodeCheck['fail']): void {
  for (const read of templateReads(text)) {
    if (!read.path) fail(field, `the placeholder ${read.text} is not a state path: write {{ state.<property> }}`);
    else if (!declared.has(read.path[0]!)) fail(field, `the placeholder ${read.text} reads state.${read.path[0]}, which the state schema does not declare`);
  }
}

/** Whether the state schema is usable (absent is: any object, no declared names). */
function checkStateSchema(schema: Json | undefined, fail: NodeCheck['fail'], limits: DefinitionLimits): boolean {
  if (schema === undefined) return true;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    fail('state_schema', 'must be a JSON Schema object ({ "type": "object", "properties": { ... } })');
    return false;
  }
  let ok = true;
  const problem = (field: string, description: string) => {
    ok = false;
    fail(field, description);
  };
  if (schema.type !== undefined && schema.type !== 'object') problem('state_schema', `the state is an object: "type" must be "object", not ${JSON.stringify(schema.type)}`);
  const properties = schema.properties;
  if (properties !== undefined && (properties === null || typeof properties !== 'object' || Array.isArray(properties))) {
    problem('state_schema.properties', 'must be an object of property schemas');
  }
  if (ok) checkSchema(schema, 'state_schema', problem, limits);
  return ok;
}

/** Stands in for the declared names when the state schema is broken (see validateFlow). */
class AnyName extends Set<string> {
  override has(): boolean {
    return true;
  }
}
const ANY_NAME: ReadonlySet<string> = new AnyName();

function checkSchema(schema: Json, field: string, fail: NodeCheck['fail'], limits: DefinitionLimits): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    if (typeof schema !== 'boolean') fail(field, 'must be a JSON Schema (an object or a boolean)');
    return;
  }
  // The compiler that validates payloads later (bounded, cached by content: schema-compiler.ts).
  const problem = schemaCompiler.problem(schema, { bytes: limits.schemaBytes, depth: limits.schemaDepth });
  if (problem) fail(field, problem.startsWith('is ') ? problem : `cannot be used: it ${problem}`);
}

function checkDuration(text: unknown, field: string, fail: NodeCheck['fail']): void {
  const ms = typeof text === 'string' ? protoDurationMs(text) : null;
  if (ms === null) fail(field, `must be a duration such as "90s", not ${JSON.stringify(text)}`);
  else if (ms < 1) fail(field, 'must be at least 1ms');
}

function checkRetry(node: FlowNodeDef, field: string, fail: NodeCheck['fail']): void {
  const r = node.retry!;
  for (const [key, value] of Object.entries({ initialInterval: r.initialInterval, maxInterval: r.maxInterval })) {
    if (value !== undefined) checkDuration(value, `${field}.${SNAKE[key]}`, fail);
  }
  const policy = retryPolicy(TOOL_RETRY_DEFAULT, retryOptionsOf(r));
  if (Array.isArray(policy)) {
    for (const p of policy) {
      const key = p.field.replace(/^retry\./, '');
      if (key !== 'initialInterval' && key !== 'maxInterval') fail(`${field}.${SNAKE[key] ?? key}`, p.description);
    }
  }
}

/** A node's retry policy as RetryOptions (unset and zero fields keep the effect's default). */
export function retryOptionsOf(r: NonNullable<FlowNodeDef['retry']>): RetryOptions {
  const ms = (d: string | undefined) => (d === undefined ? undefined : protoDurationMs(d) ?? undefined);
  return {
    ...(r.maxAttempts ? { maxAttempts: r.maxAttempts } : {}),
    ...(ms(r.initialInterval) !== undefined ? { initialInterval: ms(r.initialInterval)! } : {}),
    ...(r.backoffCoefficient ? { backoffCoefficient: r.backoffCoefficient } : {}),
    ...(ms(r.maxInterval) !== undefined ? { maxInterval: ms(r.maxInterval)! } : {}),
    ...(r.nonRetryable?.length ? { nonRetryable: r.nonRetryable } : {}),
  };
}
