import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FlowSchema } from '../../src/gen/waymark/v1/flow_service_pb.js';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { FlowService } from '../../src/gen/waymark/v1/flow_service_pb.js';
import { connectJson } from '../support/api-server.js';
import { flowMessage, refundFlow, type FlowJson } from '../flows/flow-fixtures.js';
import { ErrorInfoSchema } from '../../src/gen/google/rpc/error_details_pb.js';
import { detail, json } from './api-harness.js';
import { blockedMs, expectRefused, MAX_BLOCK_MS, startTenant, type Tenant } from './hostile-tenant-support.js';

/*
 * Issue 29, classes 1, 3, 4 and 9: flows a hostile tenant registers. Each is refused with
 * INVALID_ARGUMENT naming the field and the limit (or accepted and then run at a bounded cost),
 * nothing is written, and no request holds the replica's event loop over 100 ms. The sizes are the
 * issue's: a 1 MB fan-out of 130,000 edges, 20,000 edges, three comprehensions nested over a
 * 1,000-element literal, a 50,000-term `&&`, a title of `{{` and 2,000 spaces.
 */

let t: Tenant;
beforeAll(async () => {
  t = await startTenant('waymark_hostile_flows');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const INVALID_FLOW = { code: Code.InvalidArgument, reason: 'INVALID_FLOW' };

/** A parallel node fanning out to `n` echo tools that all join. */
function fanOut(n: number): FlowJson {
  const branches = Array.from({ length: n }, (_, i) => ({ id: `b${i}`, tool: { tool: 'echo' } }));
  return {
    name: 'fan-out',
    start: 'fork',
    nodes: [{ id: 'fork', parallel: { join: 'done' } }, ...branches, { id: 'done', end: {} }],
    edges: [...branches.map((b) => ({ from: 'fork', to: b.id })), ...branches.map((b) => ({ from: b.id, to: 'done' }))],
  };
}

/** A flow whose one branch edge has `condition` (state: items, a list of numbers). */
function withCondition(condition: string, name = 'conditional'): FlowJson {
  return {
    name,
    stateSchema: { type: 'object', properties: { items: { type: 'array' } } },
    start: 'pick',
    nodes: [{ id: 'pick', branch: {} }, { id: 'yes', end: { output: 'yes' } }, { id: 'no', end: { output: 'no' } }],
    edges: [{ from: 'pick', to: 'yes', condition }, { from: 'pick', to: 'no' }],
  };
}

const literal = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(',')}]`;

describe('class 1: a fan-out costs its size, not its square', () => {
  // Decoding a protobuf message costs about a microsecond a byte: a flow request over
  // WAYMARK_MAX_FLOW_BYTES is refused before it is decoded.
  const TOO_LARGE = { code: Code.ResourceExhausted, reason: 'REQUEST_TOO_LARGE', fields: [] };

  it('130,000 edges (a 1 MB request and more) are refused before they are decoded', async () => {
    const flow = flowMessage(fanOut(65_000));
    const err = await expectRefused(t, () => t.flows.registerFlow({ flow }, { timeoutMs: 60_000 }), TOO_LARGE);
    expect(detail(err, ErrorInfoSchema)?.metadata.limit).toBe('WAYMARK_MAX_FLOW_BYTES');
  }, 120_000);

  it('20,000 edges between 400 nodes are refused before they are decoded', async () => {
    const edges = Array.from({ length: 20_000 }, (_, i) => ({ from: 'fork', to: `b${i % 399}` }));
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage({ ...fanOut(399), edges }) }), TOO_LARGE);
  }, 60_000);

  it('more edges than the limit, in a request under the byte limit, are refused naming flow.edges and the limit', async () => {
    const edges = Array.from({ length: 2_001 }, (_, i) => ({ from: 'fork', to: `b${i % 40}` }));
    const err = await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage({ ...fanOut(40), edges }) }), { ...INVALID_FLOW, fields: ['flow.edges'] });
    expect(err.rawMessage).toContain('at most 2000 (WAYMARK_MAX_FLOW_EDGES)');
  });

  it('a parallel node over the fan-out limit is refused naming it; one at the limit registers and runs', async () => {
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(fanOut(65)) }), { ...INVALID_FLOW, fields: ['flow.nodes[0]'] });
    const { outcome, ms } = await blockedMs(() => t.flows.registerFlow({ flow: flowMessage(fanOut(64)) }));
    expect(outcome).toMatchObject({ flow: { version: '1' } });
    expect(ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
    const started = await t.runs.startRun({ workflow: 'fan-out', input: json({}), wait: true }, { timeoutMs: 60_000 });
    expect(started.run?.status).toBe(RunStatus.SUCCEEDED);
  }, 120_000);

  it('more nodes than the limit are refused naming flow.nodes', async () => {
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(fanOut(600)) }), { ...INVALID_FLOW, fields: ['flow.nodes'] });
  });

  it('a flow whose JSON text is over the byte limit (its request is not) is refused naming flow before anything is walked', async () => {
    // Each control character is one byte on the wire and six in JSON ("\u0001").
    const flow = flowMessage({ ...refundFlow(), description: '\u0001'.repeat(50_000) });
    await expectRefused(t, () => t.flows.registerFlow({ flow }), { ...INVALID_FLOW, fields: ['flow'] });
  });

  it('a deep chain of 500 nodes registers without recursion', async () => {
    const nodes = Array.from({ length: 499 }, (_, i) => ({ id: `n${i}`, tool: { tool: 'echo' } }));
    const flow = flowMessage({
      name: 'chain', start: 'n0', nodes: [...nodes, { id: 'done', end: {} }],
      edges: nodes.map((n, i) => ({ from: n.id, to: i + 1 < nodes.length ? nodes[i + 1]!.id : 'done' })),
    });
    const { outcome, ms } = await blockedMs(() => t.flows.registerFlow({ flow }));
    expect(outcome).toMatchObject({ flow: { version: '1' } });
    expect(ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
  });
});

describe('class 3: a CEL condition has a cost bound, at registration and at evaluation', () => {
  it('three comprehensions nested over a 1,000-element literal (4 KB) are refused by size', async () => {
    const condition = `${literal(1000)}.all(x, ${literal(30)}.all(y, ${literal(30)}.all(z, x + y + z >= 0)))`;
    expect(condition.length).toBeGreaterThan(4000);
    const err = await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(withCondition(condition)) }), { ...INVALID_FLOW, fields: ['flow.edges[0].condition'] });
    expect(err.rawMessage).toContain('WAYMARK_MAX_CONDITION_CHARS');
  });

  it('three comprehensions nested over 40-element literals are refused by their estimated cost', async () => {
    const condition = `${literal(40)}.all(x, ${literal(40)}.all(y, ${literal(40)}.all(z, x + y + z >= 0)))`;
    expect(condition.length).toBeLessThan(512);
    const err = await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(withCondition(condition)) }), { ...INVALID_FLOW, fields: ['flow.edges[0].condition'] });
    expect(err.rawMessage).toContain('WAYMARK_MAX_CONDITION_COST');
  });

  it('a 50,000-term && (400 KB) is refused before it is decoded; 1,500 terms by the condition limit, unparsed', async () => {
    const huge = Array.from({ length: 50_000 }, () => 'true').join(' && ');
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(withCondition(huge)) }), { code: Code.ResourceExhausted, reason: 'REQUEST_TOO_LARGE', fields: [] });
    const condition = Array.from({ length: 1_500 }, () => 'true').join(' && ');
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(withCondition(condition)) }), { ...INVALID_FLOW, fields: ['flow.edges[0].condition'] });
  });

  it('brackets nested past the limit and regular expressions (matches) are refused', async () => {
    const deep = `${'('.repeat(200)}true${')'.repeat(200)}`;
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(withCondition(deep)) }), { ...INVALID_FLOW, fields: ['flow.edges[0].condition'] });
    const regex = withCondition('state.items.exists(x, string(x).matches("^(a+)+$"))');
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(regex) }), { ...INVALID_FLOW, fields: ['flow.edges[0].condition'] });
  });

  it('a condition cheap at registration but quadratic over a large state fails its run at evaluation, within the bound', async () => {
    await t.flows.registerFlow({ flow: flowMessage(withCondition('state.items.all(x, state.items.exists(y, y == x))', 'quadratic')) });
    // A small state: evaluated as usual.
    const small = await t.runs.startRun({ workflow: 'quadratic', input: json({ items: [1, 2, 3] }), wait: true }, { timeoutMs: 30_000 });
    expect(small.run?.status).toBe(RunStatus.SUCCEEDED);
    // 1,000 items: 1e6 comparisons unbounded (seconds here); refused by the estimate before it runs.
    const items = Array.from({ length: 1_000 }, (_, i) => i);
    const { outcome, ms } = await blockedMs(() => t.runs.startRun({ workflow: 'quadratic', input: json({ items }), wait: true }, { timeoutMs: 30_000 }));
    expect(ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
    const run = (outcome as { run?: { status: RunStatus; error?: { message: string } } }).run;
    expect(run?.status).toBe(RunStatus.FAILED);
    expect(run?.error?.message).toContain('WAYMARK_MAX_CONDITION_COST');
  }, 60_000);
});

describe('class 4: templates are scanned in linear time and bounded in size', () => {
  it('an approval title of "{{" and 2,000 spaces registers and renders at once', async () => {
    const title = `{{${' '.repeat(2000)}`;
    const flow = flowMessage({
      name: 'odd-title', start: 'ask',
      stateSchema: { type: 'object', properties: { decision: { type: 'object' } } },
      nodes: [{ id: 'ask', approval: { title, into: 'decision' } }, { id: 'done', end: {} }],
      edges: [{ from: 'ask', to: 'done' }],
    });
    const registered = await blockedMs(() => t.flows.registerFlow({ flow }));
    expect(registered.outcome).toMatchObject({ flow: { version: '1' } });
    expect(registered.ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
    const started = await blockedMs(() => t.runs.startRun({ workflow: 'odd-title', input: json({}), wait: true }, { timeoutMs: 30_000 }));
    expect((started.outcome as { run?: { status: RunStatus } }).run?.status).toBe(RunStatus.SUSPENDED);
    expect(started.ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
  }, 60_000);

  it('a templated string over the limit is refused naming it', async () => {
    const flow = refundFlow();
    const nodes = structuredClone(flow.nodes) as FlowJson[];
    nodes[0] = { id: 'approve', approval: { title: `{{ state.order }}${'{{'.repeat(10_000)}`, into: 'decision' } };
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage({ ...flow, nodes }) }), { ...INVALID_FLOW, fields: ['flow.nodes[0].approval.title'] });
  });
});

describe('class 9: forbidden keys are refused in RegisterFlow, naming where', () => {
  const INVALID_REQUEST = { code: Code.InvalidArgument, reason: 'INVALID_REQUEST' };

  it('a __proto__ key in tool arguments is refused, not dropped', async () => {
    const before = await t.api.rowCounts();
    const body = `{"flow":{"name":"proto-args","start":"call","nodes":[{"id":"call","tool":{"tool":"echo","arguments":{"__proto__":{"x":1},"a":1}}},{"id":"done","end":{}}],"edges":[{"from":"call","to":"done"}]}}`;
    const res = await connectJson(t.api.address, FlowService.method.registerFlow, body);
    expect(res.json.code).toBe('invalid_argument');
    expect(JSON.stringify(res.json)).toContain('INVALID_REQUEST');
    expect(await t.api.rowCounts()).toEqual(before);
    await expect(t.flows.getFlow({ name: 'proto-args' })).rejects.toMatchObject({ code: Code.NotFound });
  });

  it('constructor and prototype keys in arguments, and a state property named constructor, are refused naming them', async () => {
    const args = flowMessage({
      name: 'bad-args', start: 'call',
      nodes: [{ id: 'call', tool: { tool: 'echo', arguments: { nested: { constructor: 1 }, prototype: 2 } } }, { id: 'done', end: {} }],
      edges: [{ from: 'call', to: 'done' }],
    });
    await expectRefused(t, () => t.flows.registerFlow({ flow: args }), {
      ...INVALID_REQUEST, fields: ['flow.nodes[0].tool.arguments.prototype', 'flow.nodes[0].tool.arguments.nested.constructor'],
    });
    const state = flowMessage({ ...refundFlow(), stateSchema: { type: 'object', properties: { constructor: { type: 'string' } } } });
    await expectRefused(t, () => t.flows.registerFlow({ flow: state }), { ...INVALID_REQUEST, fields: ['flow.state_schema.properties.constructor'] });
  });

  it('the flows above stay registrable without the keys (the refusals are for the keys)', async () => {
    const ok = flowMessage({
      name: 'good-args', start: 'call',
      nodes: [{ id: 'call', tool: { tool: 'echo', arguments: { nested: { builder: 1 } } } }, { id: 'done', end: {} }],
      edges: [{ from: 'call', to: 'done' }],
    });
    await expect(t.flows.registerFlow({ flow: ok })).resolves.toMatchObject({ created: true });
    void FlowSchema;
  });
});
