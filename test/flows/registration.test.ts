import { Code } from '@connectrpc/connect';
import { describe, expect, it } from 'vitest';
import { apiHarness, failure, shapeOf } from '../server/api-harness.js';
import { flowMessage, refundFlow, type FlowJson } from './flow-fixtures.js';

/*
 * RegisterFlow's refusals (docs/flows.md "Validation"): each invalid flow is INVALID_ARGUMENT with
 * reason INVALID_FLOW and exactly the field paths at fault, and nothing is stored.
 */

type Nodes = FlowJson[];
const base = refundFlow();
const nodes = (): Nodes => structuredClone(base.nodes) as Nodes;
const edges = (): Nodes => structuredClone(base.edges) as Nodes;
const schema = base.stateSchema as { properties: FlowJson };
const withNode = (i: number, node: FlowJson): Nodes => nodes().map((n, j) => (j === i ? node : n));

const CASES: [string, FlowJson, string[]][] = [
  ['an end nobody reaches', refundFlow({
    start: 'a',
    nodes: [{ id: 'a', tool: { tool: 'echo' }, maxVisits: 3 }, { id: 'b', tool: { tool: 'echo' } }, { id: 'done', end: {} }],
    edges: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }],
  }), ['flow.start', 'flow.nodes[2]']],
  ['an unknown tool', refundFlow({ nodes: withNode(2, { id: 'charge', tool: { tool: 'no_such_tool', into: 'refund' } }) }), ['flow.nodes[2].tool.tool']],
  ['an edge to an unknown node', refundFlow({ edges: [...edges().slice(0, 3), { from: 'charge', to: 'nowhere' }] }), ['flow.edges[3].to']],
  ['an edge from an unknown node', refundFlow({ edges: [...edges(), { from: 'ghost', to: 'refunded' }] }), ['flow.edges[4].from']],
  ['a start that is no node', refundFlow({ start: 'begin' }), ['flow.start']],
  ['CEL that does not parse', refundFlow({ edges: edges().map((e, k) => (k === 1 ? { ...e, condition: 'state.decision.approved &&' } : e)) }), ['flow.edges[1].condition']],
  ['CEL reading undeclared state', refundFlow({ edges: edges().map((e, k) => (k === 1 ? { ...e, condition: 'state.verdict == "yes"' } : e)) }), ['flow.edges[1].condition']],
  ['CEL reading another variable', refundFlow({ edges: edges().map((e, k) => (k === 1 ? { ...e, condition: 'input.approved' } : e)) }), ['flow.edges[1].condition']],
  ['CEL calling an unknown function', refundFlow({ edges: edges().map((e, k) => (k === 1 ? { ...e, condition: 'approve(state.decision)' } : e)) }), ['flow.edges[1].condition']],
  ['a condition on an edge that leaves no branch', refundFlow({ edges: edges().map((e, k) => (k === 0 ? { ...e, condition: 'true' } : e)) }), ['flow.edges[0].condition']],
  ['a state schema that is no JSON Schema', refundFlow({ stateSchema: { ...schema, properties: { ...schema.properties, order: { type: 'text' } } } }), ['flow.state_schema']],
  ['a state that is not an object', refundFlow({ stateSchema: { type: 'array' } }), ['flow.state_schema']],
  ['a bad signal payload schema', refundFlow({
    nodes: [...nodes().slice(0, 4), { id: 'declined', signal: { name: 'why', payloadSchema: { type: 'object', required: 'reason' } } }, { id: 'bye', end: {} }],
    edges: [...edges(), { from: 'declined', to: 'bye' }],
  }), ['flow.nodes[4].signal.payload_schema']],
  ['a cycle without a bound', refundFlow({
    nodes: withNode(2, { id: 'charge', tool: { tool: 'charge_back', arguments: { order: '{{ state.order }}', amount: 1 }, into: 'refund' } }),
    edges: [...edges().slice(0, 3), { from: 'charge', to: 'approve' }],
  }), ['flow.nodes[3]', 'flow.nodes[0].max_visits']],
  ['a template naming undeclared state', refundFlow({ nodes: withNode(0, { id: 'approve', approval: { title: 'Refund for {{ state.customer }}?', into: 'decision' } }) }), ['flow.nodes[0].approval.title']],
  ['a template that is no state path', refundFlow({ nodes: withNode(3, { id: 'refunded', end: { output: { id: '{{ refund.refundId }}' } } }) }), ['flow.nodes[3].end.output.id']],
  ['a write to undeclared state', refundFlow({ nodes: withNode(2, { id: 'charge', tool: { tool: 'charge_back', into: 'receipt' } }) }), ['flow.nodes[2].tool.into']],
  ['an agent on a server without an agent runtime', refundFlow({ nodes: withNode(2, { id: 'charge', agent: { model: 'default', prompt: 'go' } }) }), ['flow.nodes[2].agent']],
  ['an unknown child workflow', refundFlow({ nodes: withNode(2, { id: 'charge', child: { workflow: 'no-such-workflow' } }) }), ['flow.nodes[2].child.workflow']],
  ['two nodes with one id', refundFlow({ nodes: withNode(4, { id: 'refunded', end: {} }) }), ['flow.nodes[4].id', 'flow.edges[2].to']],
  ['a node of no kind', refundFlow({ nodes: withNode(3, { id: 'refunded' }) }), ['flow.nodes[3]']],
  ['a node with two outgoing edges', refundFlow({ edges: [...edges(), { from: 'charge', to: 'declined' }] }), ['flow.nodes[2]']],
  ['a branch with two defaults', refundFlow({ edges: [...edges(), { from: 'approved', to: 'refunded' }] }), ['flow.edges[4].condition']],
  ['a bad retry policy', refundFlow({ nodes: withNode(2, { id: 'charge', tool: { tool: 'charge_back', into: 'refund' }, retry: { backoffCoefficient: 0.5 } }) }), ['flow.nodes[2].retry.backoff_coefficient']],
  ['a parallel branch that ends before the join', refundFlow({
    start: 'fork',
    nodes: [{ id: 'fork', parallel: { join: 'joined' } }, { id: 'a', tool: { tool: 'echo' } }, { id: 'b', end: {} }, { id: 'joined', end: {} }],
    edges: [{ from: 'fork', to: 'a' }, { from: 'fork', to: 'b' }, { from: 'a', to: 'joined' }],
  }), ['flow.nodes[0].parallel.join']],
  ['a bad name', refundFlow({ name: 'no spaces' }), ['flow.name']],
];

describe('RegisterFlow refuses invalid flows with the exact field path, storing nothing', () => {
  const t = apiHarness();

  it.each(CASES)('%s', async (_what, flow, fields) => {
    const err = await failure(t.flows.registerFlow({ flow: flowMessage(flow) }));
    expect(shapeOf(err)).toEqual({ code: Code.InvalidArgument, reason: 'INVALID_FLOW', fields });
    expect(await t.store.flowList({ namespace: 'default' })).toEqual([]);
  });

  it('registers the valid flow every case mutates (the cases fail for their own reason)', async () => {
    const other = apiHarness();
    await expect(other.flows.registerFlow({ flow: flowMessage(base) })).resolves.toMatchObject({ created: true });
  });
});
