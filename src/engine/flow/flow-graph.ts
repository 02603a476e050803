// flow/: the graph rules of a flow: an end reachable from start, every node reachable, cycles bounded, parallel branches joined.
// Pure and iterative: linear in nodes plus edges, no recursion a flow can deepen; must not read or write anything.
import type { FlowDefinition, FlowNodeDef, NodeKind } from './flow-definition.js';

/** Reports one problem at a field path (flow-validation.ts collects them). */
export type GraphFail = (field: string, description: string) => void;
/**
 * The graph rules: an end reachable from start, every node reachable, every cycle bounded
 * (some node on it sets max_visits), every parallel branch reaching its join before any end.
 * Every walk is iterative and linear in nodes plus edges (a parallel node costs a few walks), so
 * no flow within the limits can make registration quadratic or deepen a recursion.
 */
export function checkGraph(
  flow: FlowDefinition, nodes: FlowNodeDef[], kinds: NodeKind[], index: Map<string, number>,
  out: Map<string, number[]>, fail: GraphFail,
): void {
  const n = nodes.length;
  // Successors by index: the edges, and for a parallel node its join (where the walk goes on).
  const next: number[][] = nodes.map((node) => (out.get(node.id) ?? []).map((k) => index.get(flow.edges![k]!.to!)!));
  const walkNext: number[][] = nodes.map((node, i) => {
    const join = node.parallel?.join;
    return join ? [...next[i]!, index.get(join)!] : next[i]!;
  });
  const reachable = new Uint8Array(n);
  const startAt = index.get(flow.start!)!;
  const stack = [startAt];
  reachable[startAt] = 1;
  while (stack.length > 0) {
    for (const to of walkNext[stack.pop()!]!) {
      if (!reachable[to]) {
        reachable[to] = 1;
        stack.push(to);
      }
    }
  }
  if (!kinds.some((k, i) => k === 'end' && reachable[i])) fail('start', `no end node is reachable from "${flow.start}"`);
  nodes.forEach((node, i) => {
    if (!reachable[i]) fail(`nodes[${i}]`, `${kinds[i]} node "${node.id}" is not reachable from start "${flow.start}"`);
  });

  for (const cycle of unboundedCycles(nodes, next)) {
    const first = cycle[0]!;
    fail(`nodes[${first}].max_visits`, `node "${nodes[first]!.id}" is on a cycle (${[...cycle, first].map((i) => nodes[i]!.id).join(' -> ')}) with no bound: set max_visits on one of its nodes`);
  }

  // A branch walks from one successor of the parallel node and stops at the join, at an end and
  // at the parallel node itself. What each node can reach that way is found backwards from the
  // join, from the ends and from the parallel node: three walks per parallel node, not one per branch.
  const previous: number[][] = nodes.map(() => []);
  walkNext.forEach((tos, from) => {
    for (const to of tos) previous[to]!.push(from);
  });
  nodes.forEach((node, p) => {
    const joinId = node.parallel?.join;
    if (!joinId) return;
    const join = index.get(joinId)!;
    const stops = (i: number) => i === join || i === p || kinds[i] === 'end';
    const reachesJoin = backwards([join], previous, stops);
    const endOf = new Int32Array(n).fill(-1);
    for (let e = 0; e < n; e++) {
      if (kinds[e] !== 'end' || e === join || endOf[e]! >= 0) continue;
      endOf[e] = e;
      const walk = [e];
      while (walk.length > 0) {
        for (const from of previous[walk.pop()!]!) {
          if (stops(from) || endOf[from]! >= 0) continue;
          endOf[from] = e;
          walk.push(from);
        }
      }
    }
    const comesBack = backwards([p], previous, stops);
    for (const start of next[p]!) {
      const at = `nodes[${p}].parallel.join`;
      const from = nodes[start]!.id;
      if (start !== join && endOf[start]! >= 0) fail(at, `the branch starting at "${from}" reaches end node "${nodes[endOf[start]!]!.id}" before the join "${joinId}"`);
      else if (start !== join && comesBack[start]) fail(at, `the branch starting at "${from}" comes back to the parallel node "${node.id}" before the join "${joinId}"`);
      else if (!reachesJoin[start]) fail(at, `the branch starting at "${from}" never reaches the join "${joinId}"`);
    }
  });
}

/** The nodes that reach one of `targets` walking forwards without passing a `stops` node (targets included). */
function backwards(targets: number[], previous: number[][], stops: (i: number) => boolean): Uint8Array {
  const seen = new Uint8Array(previous.length);
  const walk = [...targets];
  for (const t of targets) seen[t] = 1;
  while (walk.length > 0) {
    for (const from of previous[walk.pop()!]!) {
      if (seen[from] || stops(from)) continue;
      seen[from] = 1;
      walk.push(from);
    }
  }
  return seen;
}

/** The strongly connected components that are cycles with no node setting max_visits (Tarjan, iterative). */
function unboundedCycles(nodes: FlowNodeDef[], next: number[][]): number[][] {
  const n = nodes.length;
  const order = new Int32Array(n).fill(-1);
  const low = new Int32Array(n);
  const onStack = new Uint8Array(n);
  const stack: number[] = [];
  const cycles: number[][] = [];
  let counter = 0;
  for (let root = 0; root < n; root++) {
    if (order[root]! >= 0) continue;
    const frames: { node: number; edge: number }[] = [{ node: root, edge: 0 }];
    order[root] = low[root] = counter++;
    stack.push(root);
    onStack[root] = 1;
    while (frames.length > 0) {
      const frame = frames[frames.length - 1]!;
      const id = frame.node;
      const tos = next[id]!;
      if (frame.edge < tos.length) {
        const to = tos[frame.edge++]!;
        if (order[to]! < 0) {
          order[to] = low[to] = counter++;
          stack.push(to);
          onStack[to] = 1;
          frames.push({ node: to, edge: 0 });
        } else if (onStack[to]) low[id] = Math.min(low[id]!, order[to]!);
        continue;
      }
      frames.pop();
      const parent = frames[frames.length - 1];
      if (parent) low[parent.node] = Math.min(low[parent.node]!, low[id]!);
      if (low[id] !== order[id]) continue;
      const component: number[] = [];
      let member: number;
      do {
        member = stack.pop()!;
        onStack[member] = 0;
        component.push(member);
      } while (member !== id);
      const isCycle = component.length > 1 || tos.includes(id);
      if (isCycle && !component.some((m) => (nodes[m]!.maxVisits ?? 0) > 0)) cycles.push(component.reverse());
    }
  }
  return cycles;
}
