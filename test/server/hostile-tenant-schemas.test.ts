import { Code } from '@connectrpc/connect';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { RunStatus } from '../../src/gen/waymark/v1/run_pb.js';
import { schemaHash } from '../../src/engine/replay/content-key.js';
import { validatePinned } from '../../src/engine/replay/payload-schema.js';
import { DEFAULT_SCHEMA_CACHE, schemaCompiler } from '../../src/engine/replay/schema-compiler.js';
import { flowMessage, type FlowJson } from '../flows/flow-fixtures.js';
import { json } from './api-harness.js';
import { blockedMs, expectRefused, MAX_BLOCK_MS, startTenant, type Tenant } from './hostile-tenant-support.js';

/*
 * Issue 29, classes 2, 5, 7 and the `$ref: "#"` of class 8: JSON Schemas from tenants. Bulk
 * declarations leave memory where it was (a bounded cache, not every schema ever compiled), no
 * `$id` or `$ref` reaches another schema or namespace, patterns run on RE2, `uniqueItems` is linear,
 * and a schema that would recurse forever is refused when it is declared.
 */

let t: Tenant;
beforeAll(async () => {
  t = await startTenant('waymark_hostile_schemas');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const INVALID_FLOW = { code: Code.InvalidArgument, reason: 'INVALID_FLOW' };

/** A flow whose state is `schema`, ending at once with the state. */
function stateFlow(name: string, schema: FlowJson): FlowJson {
  return { name, stateSchema: schema, start: 'done', nodes: [{ id: 'done', end: {} }], edges: [] };
}

function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

describe('class 2: bulk tool declarations cost a bounded cache, not memory forever', () => {
  it('4,000 unique schemas from one namespace leave the heap near where it was, each RegisterWorker within the bound', async () => {
    const tool = (w: number, i: number) => ({
      name: `tool_${i}`,
      inputSchema: json({ type: 'object', properties: { [`field_${w}_${i}`]: { type: 'string', maxLength: w * 1000 + i }, other: { type: 'array', items: { type: 'number' } } }, required: [`field_${w}_${i}`] }),
    });
    const blocked: number[] = [];
    const declare = async (w: number, measured = true) => {
      const { outcome, ms } = await blockedMs(() => t.workers.registerWorker({ workerId: `bulk-${w}`, tools: Array.from({ length: 50 }, (_, i) => tool(w, i)) }));
      expect(outcome).toMatchObject({ workerId: `bulk-${w}` });
      if (measured) blocked.push(ms);
    };
    // Warm up (code paths, pools, the meta-schema's one compile), then measure 4,000 more.
    for (let w = 0; w < 20; w++) await declare(w, false);
    const baseline = heapAfterGc();
    for (let w = 20; w < 100; w++) await declare(w);
    const grown = heapAfterGc() - baseline;
    // Each RegisterWorker compiles its 50 new schemas with a turn of the event loop every 20 ms
    // (loop-share.ts). On the shared test machine (load ~12 on 2 cores) a GC pause or a neighbour
    // can still stretch one measurement, so the bound is asked of 95% of them, and none may reach
    // what one unyielded 50-schema compile costs here (~1 s before the change).
    blocked.sort((a, b) => a - b);
    expect(blocked[Math.floor(blocked.length * 0.95) - 1], `blocked ms: ${blocked.map((b) => b.toFixed(0)).join(' ')}`).toBeLessThanOrEqual(MAX_BLOCK_MS);
    expect(blocked[blocked.length - 1]).toBeLessThanOrEqual(3 * MAX_BLOCK_MS);
    expect(schemaCompiler.size).toBeLessThanOrEqual(DEFAULT_SCHEMA_CACHE.cacheEntries);
    // Before the change: 130-336 MB more per 4,000 schemas. Now: at most the cache's worth.
    expect(grown, `heap grew ${(grown / 1e6).toFixed(1)} MB`).toBeLessThan(48 * 1024 * 1024);
  }, 300_000);

  it('more tools than a worker may declare are refused naming tools, with the request\'s reason', async () => {
    const tools = Array.from({ length: 101 }, (_, i) => ({ name: `many_${i}` }));
    await expectRefused(t, () => t.workers.registerWorker({ workerId: 'greedy', tools }), { code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields: ['tools'] });
  });
});

describe('class 7: no $id or $ref crosses a schema or a namespace', () => {
  it('a worker of namespace B declaring $id X does not break namespace A\'s flow with $id X; registering it twice is idempotent', async () => {
    const schema = { $id: 'https://example.com/shared', type: 'object', properties: { n: { type: 'number' } } };
    const first = await t.flows.registerFlow({ namespace: 'tenant-a', flow: flowMessage(stateFlow('with-id', schema)) });
    expect(first.created).toBe(true);
    await t.workers.registerWorker({ namespace: 'tenant-b', workerId: 'b-1', tools: [{ name: 'b_tool', inputSchema: json({ ...schema, properties: { other: { type: 'string' } } }) }] });
    const again = await t.flows.registerFlow({ namespace: 'tenant-a', flow: flowMessage(stateFlow('with-id', schema)) });
    expect(again.created).toBe(false);
    const run = await t.runs.startRun({ namespace: 'tenant-a', workflow: 'with-id', input: json({ n: 1 }), wait: true }, { timeoutMs: 30_000 });
    expect(run.run?.status).toBe(RunStatus.SUCCEEDED);
    await expect(t.runs.startRun({ namespace: 'tenant-a', workflow: 'with-id', input: json({ n: 'one' }) })).rejects.toMatchObject({ code: Code.InvalidArgument });
  }, 60_000);

  it('a $ref to another schema\'s $id, a nested $id and anchors are refused naming the schema', async () => {
    await expectRefused(t, () => t.flows.registerFlow({ namespace: 'tenant-c', flow: flowMessage(stateFlow('steals', { type: 'object', properties: { x: { $ref: 'https://example.com/shared' } } })) }), { ...INVALID_FLOW, fields: ['flow.state_schema'] });
    await expectRefused(t, () => t.flows.registerFlow({ namespace: 'tenant-c', flow: flowMessage(stateFlow('nested-id', { type: 'object', properties: { x: { $id: 'https://example.com/x' } } })) }), { ...INVALID_FLOW, fields: ['flow.state_schema'] });
    await expectRefused(t, () => t.workers.registerWorker({ namespace: 'tenant-c', workerId: 'c-1', tools: [{ name: 'c_tool', inputSchema: json({ $anchor: 'a', type: 'object' }) }] }), { code: Code.InvalidArgument, reason: 'INVALID_REQUEST', fields: ['tools[0].input_schema'] });
  });
});

describe('class 8: a schema that would recurse forever is refused when declared', () => {
  it('{"type":"object","$ref":"#"} as a state schema is INVALID_FLOW, not a stack overflow at every StartRun', async () => {
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(stateFlow('loops', { type: 'object', $ref: '#' })) }), { ...INVALID_FLOW, fields: ['flow.state_schema'] });
  });

  it('a recursive schema that moves into the value (a tree) is fine', async () => {
    const tree = { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#' } } } };
    await t.flows.registerFlow({ flow: flowMessage(stateFlow('tree', tree)) });
    const run = await t.runs.startRun({ workflow: 'tree', input: json({ kids: [{ kids: [{}] }] }), wait: true }, { timeoutMs: 30_000 });
    expect(run.run?.status).toBe(RunStatus.SUCCEEDED);
  }, 60_000);
});

describe('class 5: patterns run on RE2 and uniqueItems is linear', () => {
  it('pattern ^(a+)+$ against 32 a\'s and a "!" answers INVALID_INPUT at once', async () => {
    await t.flows.registerFlow({ flow: flowMessage(stateFlow('redos', { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } })) });
    await expectRefused(t, () => t.runs.startRun({ workflow: 'redos', input: json({ s: `${'a'.repeat(32)}!` }) }), { code: Code.InvalidArgument, reason: 'INVALID_INPUT', fields: ['input.s'] });
  });

  it('a pattern RE2 cannot run (a lookahead) is refused when declared', async () => {
    await expectRefused(t, () => t.flows.registerFlow({ flow: flowMessage(stateFlow('lookahead', { type: 'object', properties: { s: { type: 'string', pattern: '(?=a)a' } } })) }), { ...INVALID_FLOW, fields: ['flow.state_schema'] });
  });

  it('uniqueItems over 8,000 items: the check is linear (within the bound), and StartRun answers both ways', async () => {
    const schema = { type: 'object', properties: { items: { type: 'array', uniqueItems: true } } };
    const items = Array.from({ length: 8_000 }, (_, i) => ({ id: i, tag: `t${i}` }));
    const pinned = { schema, schemaHash: schemaHash(schema) };
    validatePinned(pinned, { items: [] });
    // The check alone (ajv's pairwise one took 2.2 s here): the rest of a StartRun of a payload
    // this size (decoding, hashing, storing it) is the payload limit's cost, not the schema's.
    const { outcome: violations, ms } = await blockedMs(async () => validatePinned(pinned, { items: [...items, { tag: 't5', id: 5 }] }));
    expect(violations).toEqual([{ field: 'items', description: 'must pass "uniqueItems" keyword validation' }]);
    expect(ms).toBeLessThanOrEqual(MAX_BLOCK_MS);
    await t.flows.registerFlow({ flow: flowMessage(stateFlow('unique', schema)) });
    await expect(t.runs.startRun({ workflow: 'unique', input: json({ items: [...items, { tag: 't5', id: 5 }] }) })).rejects.toMatchObject({ code: Code.InvalidArgument });
    await expect(t.runs.startRun({ workflow: 'unique', input: json({ items }) })).resolves.toMatchObject({ run: { status: RunStatus.PENDING } });
  }, 60_000);
});
