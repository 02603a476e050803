// flow/: the body of a flow run: walks the graph with `ctx`, so every node's effect is a journaled call.
// Must not write the journal or decide replay itself: it only calls ctx (tool, agent, approve, signal, child, emit, parallel).
import { z } from 'zod';
import { DEFAULT_DEFINITION_LIMITS, type DefinitionLimits } from '../../journal/definition-limits.js';
import type { Json } from '../../journal/run.js';
import { FlowRunError } from '../errors.js';
import type { Workflow, WorkflowContext } from '../author/workflow.js';
import { toJson, schemaHash } from '../replay/content-key.js';
import { validatePinned, type PinnedSchema } from '../replay/payload-schema.js';
import { compileCondition, conditionValue, type CompiledCondition } from './flow-cel.js';
import { declaredState, nodeKind, protoDurationMs, type FlowDefinition, type FlowNodeDef, type NodeKind } from './flow-definition.js';
import { renderJson, renderText } from './flow-template.js';
import { retryOptionsOf } from './flow-validation.js';

/*
 * A flow run is a code workflow whose body is this walk (docs/flows.md "Running a flow"). Every
 * effect goes through `ctx`, so replay, retries, budgets, approvals, streams and provenance are the
 * code path's. What is the flow's own is journaled as `emit` entries: `flow.node` each time a node
 * is entered (with the node it came from), and `flow.branch` for each branch decision, listing every
 * edge with its condition, the condition's result and whether it was taken. Conditions are pure
 * over the state, and the state is rebuilt from journaled results on replay, so a replay takes the
 * same edges. A parallel node's branches each walk a copy of the state in their own scope; at the
 * join, what each branch wrote is merged in branch order.
 */

type State = Record<string, Json>;

/** Finds the workflow or flow a child node names (the engine supplies it: registry, then the namespace's flows). */
export type ChildResolver = (name: string) => Promise<Workflow>;

interface Walk {
  ctx: WorkflowContext;
  state: State;
  /** Properties this walk wrote (merged into the parent's state at a join). */
  written: Set<string>;
  /** Entries of each node in this walk (a parallel branch starts from its parent's counts). */
  visits: Map<string, number>;
}

export class FlowInterpreter {
  private readonly nodes = new Map<string, FlowNodeDef>();
  private readonly out = new Map<string, { to: string; condition: string | null }[]>();
  private readonly conditions = new Map<string, CompiledCondition>();
  private readonly state: PinnedSchema | null;
  private readonly declared: ReadonlySet<string>;

  constructor(
    private readonly flow: FlowDefinition, private readonly resolveChild: ChildResolver,
    private readonly limits: DefinitionLimits = DEFAULT_DEFINITION_LIMITS,
  ) {
    for (const node of flow.nodes ?? []) this.nodes.set(node.id, node);
    for (const edge of flow.edges ?? []) {
      const list = this.out.get(edge.from!);
      const out = { to: edge.to!, condition: edge.condition || null };
      if (list) list.push(out);
      else this.out.set(edge.from!, [out]);
    }
    this.declared = declaredState(flow);
    this.state = flow.stateSchema === undefined ? null : { schema: flow.stateSchema, schemaHash: schemaHash(flow.stateSchema) };
  }

  /** The run: from `start` to an end node; returns that node's output. */
  async run(ctx: WorkflowContext, input: Json): Promise<Json> {
    const state: State = input !== null && typeof input === 'object' && !Array.isArray(input) ? { ...input } : {};
    const ended = await this.walk({ ctx, state, written: new Set(), visits: new Map() }, this.flow.start!, null, null);
    return ended!;
  }

  /** Walks from `id` until an end node (its output) or `stopAt` (a parallel's join: null). */
  private async walk(w: Walk, first: string, stopAt: string | null, cameFrom: string | null): Promise<Json | null> {
    let id = first;
    let from = cameFrom;
    for (;;) {
      if (id === stopAt) return null;
      const node = this.nodes.get(id)!;
      const kind = nodeKind(node)!;
      const visit = (w.visits.get(id) ?? 0) + 1;
      if (node.maxVisits && visit > node.maxVisits) {
        throw new FlowRunError('FLOW_LOOP_BOUND', id, `entered a ${visit}th time, past its max_visits of ${node.maxVisits}`);
      }
      w.visits.set(id, visit);
      await w.ctx.emit({ type: 'flow.node', node: id, kind, visit, from });
      let next: string;
      switch (kind) {
        case 'end':
          if (node.end!.continueAsNew !== undefined) return w.ctx.continueAsNew(renderJson(node.end!.continueAsNew, w.state));
          return node.end!.output === undefined ? { ...w.state } : renderJson(node.end!.output, w.state);
        case 'branch':
          next = await this.decide(w, node);
          break;
        case 'parallel':
          await this.fork(w, node);
          next = node.parallel!.join!;
          break;
        default: {
          const value = await this.effect(w.ctx, node, kind, w.state);
          const into = intoOf(node, kind);
          if (into) this.write(w, id, into, value);
          next = this.out.get(id)![0]!.to;
        }
      }
      from = id;
      id = next;
    }
  }

  /** Evaluates every condition of a branch's edges, journals them all, and returns the edge taken. */
  private async decide(w: Walk, node: FlowNodeDef): Promise<string> {
    const edges = this.out.get(node.id) ?? [];
    const recorded: { to: string; condition: string | null; result: boolean | null; taken: boolean }[] = [];
    let taken: string | null = null;
    for (const edge of edges) {
      if (edge.condition === null) continue;
      const outcome = conditionValue(this.condition(edge.condition), w.state);
      if ('error' in outcome) throw new FlowRunError('FLOW_CONDITION', node.id, `the condition ${JSON.stringify(edge.condition)} ${outcome.error}`);
      const take = outcome.value && taken === null;
      if (take) taken = edge.to;
      recorded.push({ to: edge.to, condition: edge.condition, result: outcome.value, taken: take });
    }
    const fallback = edges.find((e) => e.condition === null);
    if (fallback) {
      recorded.push({ to: fallback.to, condition: null, result: null, taken: taken === null });
      taken ??= fallback.to;
    }
    await w.ctx.emit({ type: 'flow.branch', node: node.id, taken, edges: recorded });
    if (taken === null) throw new FlowRunError('FLOW_NO_BRANCH', node.id, 'no condition was true and the branch has no edge without a condition');
    return taken;
  }

  private condition(text: string): CompiledCondition {
    let compiled = this.conditions.get(text);
    if (!compiled) {
      const made = compileCondition(text, this.declared, this.limits);
      if (typeof made === 'string') throw new FlowRunError('FLOW_CONDITION', '?', `the condition ${JSON.stringify(text)} ${made}`);
      compiled = made;
      this.conditions.set(text, compiled);
    }
    return compiled;
  }

  /** Runs a parallel node's branches (ctx.parallel: one scope each), then merges their writes in order. */
  private async fork(w: Walk, node: FlowNodeDef): Promise<void> {
    const join = node.parallel!.join!;
    const branches = (this.out.get(node.id) ?? []).map((edge) => ({ start: edge.to, walk: null as Walk | null }));
    await w.ctx.parallel(branches.map((branch) => async (ctx: WorkflowContext) => {
      const walk: Walk = { ctx, state: structuredClone(w.state), written: new Set(), visits: new Map(w.visits) };
      branch.walk = walk;
      await this.walk(walk, branch.start, join, node.id);
    }));
    for (const { walk } of branches) {
      for (const key of walk!.written) this.write(w, node.id, key, walk!.state[key]!);
    }
  }

  private write(w: Walk, node: string, key: string, value: Json): void {
    w.state[key] = value;
    w.written.add(key);
    if (!this.state) return;
    const violations = validatePinned(this.state, w.state);
    if (violations.length > 0) {
      const detail = violations.map((v) => `${v.field || '(state)'}: ${v.description}`).join('; ');
      throw new FlowRunError('FLOW_STATE', node, `writing state.${key} breaks the state schema: ${detail}`);
    }
  }

  private async effect(ctx: WorkflowContext, node: FlowNodeDef, kind: NodeKind, state: State): Promise<Json> {
    const timeout = node.timeout === undefined ? undefined : protoDurationMs(node.timeout)!;
    const retry = node.retry === undefined ? undefined : retryOptionsOf(node.retry);
    switch (kind) {
      case 'tool': {
        const t = node.tool!;
        const args = renderJson(t.arguments ?? {}, state);
        const options = { ...(retry ? { retry } : {}), ...(timeout !== undefined ? { timeout } : {}) };
        return toJson(await ctx.tool(t.tool!, args, options), `the result of tool "${t.tool}"`);
      }
      case 'agent': {
        const a = node.agent!;
        const result = await ctx.agent(renderText(a.prompt ?? '', state), {
          model: a.model!, agentType: node.id, tools: a.tools ?? [],
          ...(a.instructions ? { system: renderText(a.instructions, state) } : {}),
          ...(a.maxSteps ? { maxSteps: a.maxSteps } : {}),
          ...(retry ? { retry } : {}), ...(timeout !== undefined ? { timeout } : {}),
        });
        if (a.outputSchema === undefined) return result.text;
        return this.agentAnswer(node.id, result.text, a.outputSchema);
      }
      case 'approval': {
        const a = node.approval!;
        const deadline = a.deadline === undefined ? undefined : protoDurationMs(a.deadline)!;
        const decision = await ctx.approve({
          name: node.id, title: renderText(a.title ?? '', state),
          ...(a.description ? { description: renderText(a.description, state) } : {}),
          ...(deadline !== undefined ? { deadline } : {}),
          onTimeout: a.onTimeout === 'APPROVAL_TIMEOUT_DECISION_APPROVE' ? 'approve' : 'deny',
        });
        return toJson(decision, `the decision of approval "${node.id}"`);
      }
      case 'signal': {
        const s = node.signal!;
        const deadline = s.deadline === undefined ? undefined : protoDurationMs(s.deadline)!;
        const payload = await ctx.signal(s.name!, {
          ...(s.payloadSchema !== undefined ? { schema: z.fromJSONSchema(s.payloadSchema as Parameters<typeof z.fromJSONSchema>[0]) } : {}),
          ...(deadline !== undefined ? { deadline } : {}),
        });
        return toJson(payload, `the payload of signal "${s.name}"`);
      }
      case 'child': {
        const c = node.child!;
        const workflow = await this.resolveChild(c.workflow!);
        return toJson(await ctx.child(workflow, renderJson(c.input ?? {}, state)), `the output of child "${c.workflow}"`);
      }
      default:
        throw new Error(`flow node kind ${kind} has no effect`);
    }
  }

  /** An agent's final text as JSON satisfying its output schema (a ```json fence around it is allowed). */
  private agentAnswer(node: string, text: string, schema: Json): Json {
    const body = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/.exec(text)?.[1] ?? text;
    let value: Json;
    try {
      value = JSON.parse(body) as Json;
    } catch {
      throw new FlowRunError('FLOW_STATE', node, `the agent's answer is not JSON, but the node has an output_schema: ${JSON.stringify(text.slice(0, 200))}`);
    }
    const violations = validatePinned({ schema, schemaHash: schemaHash(schema) }, value);
    if (violations.length > 0) {
      throw new FlowRunError('FLOW_STATE', node, `the agent's answer fails its output_schema: ${violations.map((v) => `${v.field || '(answer)'}: ${v.description}`).join('; ')}`);
    }
    return value;
  }
}

function intoOf(node: FlowNodeDef, kind: NodeKind): string | undefined {
  switch (kind) {
    case 'agent': return node.agent!.into;
    case 'tool': return node.tool!.into;
    case 'approval': return node.approval!.into;
    case 'signal': return node.signal!.into;
    case 'child': return node.child!.into;
    default: return undefined;
  }
}
