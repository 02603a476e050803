import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, defineWorkflow, type WorkflowContext } from '../../src/index.js';
import { RunEngine } from '../../src/engine/run-engine.js';
import { Registry } from '../../src/engine/registry.js';
import type { Json, Run } from '../../src/journal/run.js';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { crashingStore, SimulatedCrash, type CrashPoint } from './crashing-store.js';
import { FakeClock } from './harness.js';

/*
 * research/reliability.md §4.1 in process: random workflows of steps, tools, parallel branches,
 * Promise.all and approvals (steps with and without an intent); the worker crashes at random fenced writes (before or after the write
 * commits) and a new lease recovers the run, any number of times. An oracle outside the engine
 * records every execution and every committed `ok`. Then:
 *   - no effect executes after its `ok` committed (completed effects never run again);
 *   - each effect presents one idempotency key on every dispatch;
 *   - the crashed run ends with the same output as an uncrashed run of the same program.
 */

type Node =
  | { t: 'step'; label: string; intent: boolean } // one write, or an intent first ({ intent: true })
  | { t: 'tool'; label: string; readOnly: boolean }
  | { t: 'approval'; label: string; approve: boolean; then: Node[] }
  | { t: 'par'; branches: Node[][] }
  | { t: 'all'; items: Node[] };

/** The oracle's log: `deliver <key> <label>` from effects, `commit <key>` from the store. */
let events: string[] = [];

const deliver = (label: string, key: string) => events.push(`deliver ${key} ${label}`);
const writeTool = defineTool({ name: 'write_tool', description: 'mutating', input: z.object({ label: z.string() }),
  execute: ({ label }, { idempotencyKey }) => { deliver(label, idempotencyKey); return `${label}:written`; } });
const readTool = defineTool({ name: 'read_tool', description: 'read-only', input: z.object({ label: z.string() }), mutating: false,
  execute: async ({ label }, { idempotencyKey }) => { deliver(label, idempotencyKey); return `${label}:read`; } });

async function one(ctx: WorkflowContext, n: Node): Promise<Json> {
  switch (n.t) {
    case 'step':
      return ctx.step(n.label, ({ idempotencyKey }) => { deliver(n.label, idempotencyKey); return `${n.label}:ok`; }, { intent: n.intent });
    case 'tool':
      return (await ctx.tool(n.readOnly ? 'read_tool' : 'write_tool', { label: n.label })) as Json;
    case 'approval': {
      const d = await ctx.approve({ title: n.label });
      return d.approved ? [`${n.label}:approved`, ...(await seq(ctx, n.then))] : `${n.label}:denied`;
    }
    case 'par':
      return ctx.parallel(n.branches.map((b) => (c: WorkflowContext) => seq(c, b)));
    case 'all':
      return Promise.all(n.items.map((i) => one(ctx, i)));
  }
}

async function seq(ctx: WorkflowContext, nodes: Node[]): Promise<Json[]> {
  const out: Json[] = [];
  for (const n of nodes) out.push(await one(ctx, n));
  return out;
}

const program = defineWorkflow({ name: 'program', input: z.object({ nodes: z.array(z.any()) }) }, async (ctx, { nodes }) => seq(ctx, nodes as Node[]));

const nodeArb: fc.Arbitrary<Node[]> = fc.letrec<{ node: Node; list: Node[] }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.boolean().map<Node>((intent) => ({ t: 'step', label: '', intent })),
    fc.boolean().map<Node>((readOnly) => ({ t: 'tool', label: '', readOnly })),
    fc.record({ approve: fc.boolean(), then: tie('list') }).map<Node>(({ approve, then }) => ({ t: 'approval', label: '', approve, then: then as Node[] })),
    fc.array(tie('list'), { minLength: 1, maxLength: 3 }).map<Node>((branches) => ({ t: 'par', branches: branches as Node[][] })),
    fc.array(fc.oneof(
      fc.boolean().map<Node>((intent) => ({ t: 'step', label: '', intent })),
      fc.boolean().map<Node>((readOnly) => ({ t: 'tool', label: '', readOnly })),
      fc.boolean().map<Node>((approve) => ({ t: 'approval', label: '', approve, then: [] })),
    ), { minLength: 1, maxLength: 3 }).map<Node>((items) => ({ t: 'all', items })),
  ),
  list: fc.array(tie('node'), { maxLength: 4 }),
})).list.map((nodes) => label(nodes as Node[]));

/** Gives every node a unique label (its position), so the oracle can tell effects apart. */
function label(nodes: Node[]): Node[] {
  let n = 0;
  const walk = (list: Node[]): Node[] => list.map((node): Node => {
    switch (node.t) {
      case 'step': case 'tool': return { ...node, label: `e${n++}` };
      case 'approval': return { ...node, label: `a${n++}`, then: walk(node.then) };
      case 'par': return { ...node, branches: node.branches.map(walk) };
      case 'all': return { ...node, items: walk(node.items) };
    }
  });
  return walk(nodes);
}

function approvals(nodes: Node[], into = new Map<string, boolean>()): Map<string, boolean> {
  for (const n of nodes) {
    if (n.t === 'approval') { into.set(n.label, n.approve); approvals(n.then, into); }
    if (n.t === 'par') n.branches.forEach((b) => approvals(b, into));
    if (n.t === 'all') approvals(n.items, into);
  }
  return into;
}

const TTL = 30_000;
const NAMESPACE = 'prop';

/** Runs `nodes` to its end, deciding approvals as the program says and recovering from every crash. */
async function runProgram(nodes: Node[], crashes: CrashPoint[]): Promise<{ run: Run; memory: MemoryStore; recoveries: number }> {
  const clock = new FakeClock();
  const memory = new MemoryStore({ clock: clock.now });
  const { store } = crashingStore(memory, crashes, (e) => events.push(e));
  const registry = new Registry().register(program, writeTool, readTool);
  const engine = new RunEngine({ store, registry, holder: 'w', leaseTtlMs: TTL, clock: clock.now });
  const decisions = approvals(nodes);
  const { run } = await engine.runStart({ namespace: NAMESPACE, workflowName: 'program', input: { nodes } });
  let recoveries = 0;
  for (let round = 0; round < 500; round++) {
    const current = await memory.runGet({ runId: run.id, namespace: NAMESPACE });
    if (current.status === 'SUCCEEDED' || current.status === 'FAILED') return { run: current, memory, recoveries };
    if (current.status === 'SUSPENDED') {
      for (const w of await engine.runWaits({ runId: run.id, namespace: NAMESPACE })) {
        await engine.approvalDecide({ namespace: NAMESPACE, approvalId: w.approvalId!, approve: decisions.get(w.title)!, by: 'prop', requestId: w.title });
      }
      continue;
    }
    if (current.status === 'RUNNING') {
      // The holder died mid-execution: its lease must expire before a new worker takes over.
      clock.advance(TTL + 1);
      recoveries++;
    }
    // A crash at the take itself (runLeaseAcquireRunning, a write) leaves runExecute by throwing: the worker died there.
    await engine.runExecute({ runId: run.id }).catch((err: unknown) => {
      if (!(err instanceof SimulatedCrash)) throw err;
    });
  }
  throw new Error('the run did not finish in 500 rounds');
}

describe('crash anywhere, recover any number of times', () => {
  it('completed effects never run again, keys are stable, and the output matches an uncrashed run', async () => {
    const crashArb = fc.uniqueArray(
      fc.record({ write: fc.integer({ min: 1, max: 24 }), when: fc.constantFrom<'before' | 'after'>('before', 'after') }),
      { selector: (c) => c.write, maxLength: 4 },
    );
    let runs = 0;
    let recovered = 0;
    await fc.assert(fc.asyncProperty(nodeArb, crashArb, async (nodes, crashes) => {
      events = [];
      const reference = await runProgram(nodes, []);
      const referenceDeliveries = new Set(events.filter((e) => e.startsWith('deliver')).map((e) => e.split(' ')[2]));
      events = [];
      const crashed = await runProgram(nodes, crashes);
      runs++;
      if (crashed.recoveries > 0) recovered++;

      expect(crashed.run.status).toBe(reference.run.status);
      expect(crashed.run.output).toEqual(reference.run.output);

      const committed = new Set<string>();
      const keysByLabel = new Map<string, Set<string>>();
      const deliveries = new Map<string, number>();
      for (const e of events) {
        const [what, key, lbl] = e.split(' ') as [string, string, string];
        if (what === 'commit') committed.add(key);
        if (what === 'deliver') {
          expect(committed.has(key), `${lbl} ran again after its ok committed`).toBe(false);
          keysByLabel.set(lbl, (keysByLabel.get(lbl) ?? new Set()).add(key));
          deliveries.set(key, (deliveries.get(key) ?? 0) + 1);
        }
      }
      for (const [lbl, keys] of keysByLabel) expect(keys.size, `${lbl} saw ${keys.size} idempotency keys`).toBe(1);
      expect(new Set(keysByLabel.keys())).toEqual(referenceDeliveries);
      for (const n of deliveries.values()) expect(n).toBeLessThanOrEqual(1 + crashes.length);

      // Every effect the journal records as done was executed, under the key the journal holds.
      const entries = await crashed.memory.journalList({ runId: crashed.run.id });
      const delivered = new Set(deliveries.keys());
      for (const e of entries) {
        if (e.status === 'ok' && (e.kind === 'step' || e.kind === 'tool')) expect(delivered.has(e.idempotencyKey!)).toBe(true);
      }
    }), { numRuns: 200 });
    // Not vacuous: a good share of the runs really crashed and were recovered by a new lease.
    expect(recovered / runs).toBeGreaterThan(0.25);
  });
});
